package ring

import (
	"errors"
	"fmt"
	"slices"

	"homering/discovery/deviceid"
	"homering/halda"
)

// without is the problem a ring re-plans with once it has lost devices: prob
// (the calibrated problem its plan was solved from) less the gone devices,
// its rounds per token given up when the devices left can no longer all
// hold a window of every round. The head (prob.Devices[0]) cannot be gone:
// a ring without its head has no one to plan for.
func without(prob halda.Problem, gone []deviceid.ID) (halda.Problem, error) {
	if len(prob.Devices) == 0 {
		return prob, errors.New("ring: no problem to re-plan from")
	}
	if slices.Contains(gone, prob.Devices[0].ID) {
		return prob, fmt.Errorf("ring: the head %s cannot be planned without", prob.Devices[0].Name)
	}
	q := prob
	q.Devices = slices.DeleteFunc(slices.Clone(prob.Devices), func(d halda.Device) bool { return slices.Contains(gone, d.ID) })
	if q.Rounds > 0 && len(q.Devices) > q.Model.Layers/q.Rounds {
		q.Rounds = 0 // a fixed k that no longer leaves every device a layer per round
	}
	return q, nil
}

// PlanWithout is the one re-plan after a loss (the head job's answer to a
// Replan action): Halda over without(prob, gone),
// solved by s. It returns the problem it solved (the next loss re-plans
// from it) and the plan. prob is already calibrated, so the plan is final:
// no calibration pass follows.
func PlanWithout(prob halda.Problem, gone []deviceid.ID, s halda.Solver) (halda.Problem, halda.Plan, error) {
	q, err := without(prob, gone)
	if err != nil {
		return prob, halda.Plan{}, err
	}
	plan, err := halda.Solve(q, s)
	if err != nil {
		return prob, halda.Plan{}, fmt.Errorf("ring: no plan without %v: %w", gone, err)
	}
	return q, plan, nil
}
