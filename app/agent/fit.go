package agent

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"homering/app/problem"
	"homering/engine/runner"
)

// Fitting a conversation into the context (issue 18 item 4).
//
// Where: here, around the engine's generate calls, because the prompt's
// token count exists only in the engine child (engine/head formats and
// tokenizes the prompt and makes the one context check, CheckContext) and
// the agent process never tokenizes (no cgo in the agent; deps_test keeps
// engine/llama out of it). The child's answer to a prompt too long for the
// context names its exact token count and the context ("… (N tokens,
// context M)"): tokenizing fails there before any layer runs, so asking
// again with fewer messages costs one tokenization, on one device or a
// ring (whose job starts only after the check).
//
// Policy: the oldest messages after a leading system message are left out,
// whole turns at a time (the first kept message is a user message, as chat
// templates expect), when the prompt would not fit with room for the reply
// (the context less reserve(): budgets' fits). Then it is trimmed to
// budgets' target, a quarter of the context below that, and the caller
// sends the count back with the next turn (ChatRequest.LeftOut; for a
// client that does not, as Ollama's, the agent remembers it by the first
// kept message: rememberStart): while the rest fits, the same messages stay
// out, so that the prompt starts as it
// did and the KV cache (or a kept ring job) serves all but the new turn;
// trimming to the minimum every turn would move the start, and re-read the
// whole prompt, at every turn. The last message is always kept; when even
// it (with the system prompt) does not fit, the request fails with
// problem.ContextFull. Which messages to leave out is estimated from bytes
// (leaveOut) at the tokens per byte of the last count: the count of the
// failed attempt (exact for the messages it had), or, before the first
// attempt, of this model's last prompt (learnt), so that a conversation
// that nearly fills the context is trimmed before its reply is cut to a
// few tokens. A wrong estimate costs one more attempt, never a wrong
// prompt: the engine's check stays the judge.
//
// Callers that do not ask for fitting (the OpenAI and Anthropic APIs) get
// problem.ContextFull for a prompt that does not fit.

// msgOverhead is what a message costs in the estimate beyond its content:
// the role and the template's markers (ChatML's come to about 5 tokens).
const msgOverhead = 16

// maxFitTries bounds the attempts of one request: each leaves out at least
// one more turn, so only a very wrong estimate needs many.
const maxFitTries = 6

// tooLongText matches the engine's answer to a prompt that does not fit:
// engine/head.ErrTooLong with CheckContext's counts, as the runner child
// words it (its package prefixes dropped). TestTooLongMatchesEngine holds
// it to the engine's text.
var tooLongText = regexp.MustCompile(`does not fit in the context.*\((\d+) tokens, context (\d+)\)`)

// tooLong reports whether err is the engine's refusal of a prompt too long
// for the context, with the prompt's tokens and the context's size.
func tooLong(err error) (prompt, nCtx int, ok bool) {
	var re *runner.RequestError
	if !errors.As(err, &re) || re.Code != runner.CodeBadRequest {
		return 0, 0, false
	}
	m := tooLongText.FindStringSubmatch(re.Text)
	if m == nil {
		return 0, 0, false
	}
	prompt, _ = strconv.Atoi(m[1])
	nCtx, _ = strconv.Atoi(m[2])
	return prompt, nCtx, true
}

// reserve is the room a prompt must leave for the reply in a context of
// nCtx: the reply's limit when one is set (at most half the context), else
// a quarter of the context.
func reserve(nCtx, maxTokens int) int {
	if maxTokens > 0 {
		return min(maxTokens, nCtx/2)
	}
	return nCtx / 4
}

// budgets are the most tokens a prompt may have in a context of nCtx (fits)
// and what a prompt that must be trimmed is trimmed to (target).
func budgets(nCtx, maxTokens int) (fits, target int) {
	fits = nCtx - reserve(nCtx, maxTokens)
	return fits, fits - nCtx/4
}

// systemCount is 1 when msgs open with a system message (always kept), else 0.
func systemCount(msgs []runner.Message) int {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		return 1
	}
	return 0
}

// size is msgs' weight in the estimate.
func size(msgs []runner.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + msgOverhead
	}
	return n
}

// leaveOut says how many of msgs' oldest messages after a leading system
// message to leave out so that the prompt's estimate (perByte tokens per
// byte of size) fits budget tokens: the fewest that do, such that the first
// kept message after the system message is a user one (or is the last
// message). It never leaves out the last message: when nothing else fits,
// it leaves out everything between the system message and the last one.
func leaveOut(msgs []runner.Message, perByte float64, budget int) int {
	sys := systemCount(msgs)
	rest := msgs[sys:]
	if len(rest) <= 1 {
		return 0
	}
	est := func(kept []runner.Message) float64 { return perByte * float64(size(msgs[:sys])+size(kept)) }
	for n := 0; n < len(rest)-1; n++ {
		if rest[n].Role != "user" && n > 0 {
			continue // a turn starts with the user
		}
		if est(rest[n:]) <= float64(budget) {
			return n
		}
	}
	return len(rest) - 1
}

// keptMessages is msgs without the n oldest after a leading system message.
func keptMessages(msgs []runner.Message, n int) []runner.Message {
	if n == 0 {
		return msgs
	}
	sys := systemCount(msgs)
	return append(append([]runner.Message{}, msgs[:sys]...), msgs[sys+n:]...)
}

// fitter runs one request's attempts (fitRun).
type fitter struct {
	fit       bool    // leave old messages out rather than fail
	nCtx      int     // the context, 0: not known before the engine says
	maxTokens int     // the request's reply limit, 0: none
	perByte   float64 // this model's last tokens per byte, 0: none yet
	// from is how many messages the conversation's last turn left out
	// (ChatRequest.LeftOut): they stay out while the rest fits.
	from int
}

// start is how many messages to leave out before any count: the last
// turn's (f.from) when that still starts a turn and everything does not
// fit, then more when the rest does not fit either, by the learnt rate.
func (f fitter) start(all []runner.Message) int {
	if !f.fit {
		return 0
	}
	sys := systemCount(all)
	omit := 0
	if f.from > 0 && f.from < len(all)-sys && all[sys+f.from].Role == "user" {
		omit = f.from
	}
	if f.perByte <= 0 || f.nCtx <= 0 {
		return omit
	}
	fits, target := budgets(f.nCtx, f.maxTokens)
	est := func(msgs []runner.Message) float64 { return f.perByte * float64(size(msgs)) }
	switch {
	case est(all) <= float64(fits):
		return 0 // all fits (a larger context, deleted messages): leave nothing out
	case est(keptMessages(all, omit)) <= float64(fits):
		return omit
	}
	return omit + leaveOut(keptMessages(all, omit), f.perByte, target)
}

// fitRun runs g with run, leaving out the oldest messages as the policy
// above says, and returns run's stats and error, how many messages it left
// out, and the tokens per byte of the last prompt it ran or tried (0: none
// counted). A prompt that does not fit ends in problem.ContextFull.
func (f fitter) fitRun(g runner.GenerateParams, run func(runner.GenerateParams) (runner.Stats, error)) (runner.Stats, int, float64, error) {
	all := g.Messages
	omit := f.start(all)
	for try := 1; ; try++ {
		g.Messages = keptMessages(all, omit)
		st, err := run(g)
		n, nCtx, long := tooLong(err)
		if !long {
			perByte := 0.0
			if err == nil && len(g.Messages) > 0 && st.PromptTokens > 0 {
				perByte = float64(st.PromptTokens) / float64(size(g.Messages))
			}
			return st, omit, perByte, err
		}
		perByte := float64(n) / float64(max(size(g.Messages), 1))
		more := 0
		if f.fit && len(g.Messages) > 0 {
			_, target := budgets(nCtx, f.maxTokens)
			more = leaveOut(g.Messages, perByte, target)
			if try == maxFitTries {
				more = leaveOut(g.Messages, perByte, 0) // all but the last
			}
		}
		if more == 0 {
			return st, omit, perByte, contextFull(g.Messages, n, nCtx, f.fit)
		}
		omit += more
	}
}

// contextFull words a prompt of n tokens that a context of nCtx cannot hold:
// the last message (with the system prompt) when nothing else was left to
// leave out, else the conversation.
func contextFull(msgs []runner.Message, n, nCtx int, fit bool) error {
	counts := fmt.Sprintf("%d tokens; the context holds %d", n, nCtx)
	sys := systemCount(msgs)
	switch {
	case !fit && len(msgs) > 1+sys:
		return problem.New(problem.ContextFull, fmt.Sprintf(
			"The conversation is too long for the context (%s): leave out its oldest messages, shorten them or raise the context length.", counts))
	case sys == 1:
		return problem.New(problem.ContextFull, fmt.Sprintf(
			"The last message and the system prompt are too long for the context (%s): shorten them or raise the context length.", counts))
	case len(msgs) == 0:
		return problem.New(problem.ContextFull, fmt.Sprintf(
			"The prompt is too long for the context (%s): shorten it or raise the context length.", counts))
	}
	return problem.New(problem.ContextFull, fmt.Sprintf(
		"The last message is too long for the context (%s): shorten it or raise the context length.", counts))
}

// learntPerByte is the tokens per byte of model's last prompt (0: none yet).
func (b *Agent) learntPerByte(model string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.perByte[model]
}

// learnPerByte keeps v (when counted) as model's tokens per byte.
func (b *Agent) learnPerByte(model string, v float64) {
	if v <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perByte == nil {
		b.perByte = map[string]float64{}
	}
	b.perByte[model] = v
}

// maxStarts bounds the starts the agent remembers (rememberStart): past it
// they are all forgotten, and the next turns are trimmed afresh.
const maxStarts = 256

// startKey names model's conversation whose first kept message is m.
func startKey(model string, m runner.Message) [32]byte {
	return sha256.Sum256([]byte(model + "\x00" + m.Role + "\x00" + m.Content))
}

// rememberStart notes that msgs ran on model with their omit oldest messages
// (after a leading system message) left out, so that the conversation's next
// turn starts at the same message (rememberedStart) when its client does not
// send the count back.
func (b *Agent) rememberStart(model string, msgs []runner.Message, omit int) {
	sys := systemCount(msgs)
	if omit <= 0 || sys+omit >= len(msgs) {
		return
	}
	k := startKey(model, msgs[sys+omit])
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.starts == nil || len(b.starts) >= maxStarts {
		b.starts = map[[32]byte]int{}
	}
	b.starts[k] = omit
}

// rememberedStart is how many of msgs' oldest messages the last turn of
// their conversation on model left out (rememberStart), 0 when none is
// remembered: the first i whose message i after the system message was that
// turn's first kept message, i messages in.
func (b *Agent) rememberedStart(model string, msgs []runner.Message) int {
	sys := systemCount(msgs)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.starts) == 0 {
		return 0
	}
	for i := 1; sys+i < len(msgs)-1; i++ {
		if b.starts[startKey(model, msgs[sys+i])] == i {
			return i
		}
	}
	return 0
}
