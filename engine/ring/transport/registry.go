package transport

import "homering/engine/ring/wire"

// The one numbered table of the frame types a Homering link carries, and
// the one protocol-version range they make up. Three packages own types in
// it, each in its own band:
//
//	1-31    the transport itself (hello, errors, pings, unpairing, pairing)
//	32-47   app/node's control messages (a head's looks and job asks)
//	64-255  engine/ring/wire's ring messages (plans, activations, slices, jobs)
//
// Values are wire constants: appended only, never renumbered. A change to
// any frame's meaning or encoding raises ProtoMax; Hello (hello.go) refuses
// a peer whose range does not overlap ours with a sentence naming both.

// ProtoMin and ProtoMax are the range of link protocol versions this build
// speaks: one range for every frame type below (wire keeps the numbers,
// being the leaf the ring's codec lives in).
const (
	ProtoMin = wire.ProtoMin
	ProtoMax = wire.ProtoMax
)

// app/node's control messages (its ring.go: payloads and meaning).
const (
	MsgProfileAsk MsgType = 32 // head → worker: empty payload
	MsgProfile    MsgType = 33 // worker → head: JSON PeerProfile
	MsgJobAsk     MsgType = 34 // head → worker: JSON JobAsk
	MsgJobReady   MsgType = 35 // worker → head: JSON JobReady
)

// FrameKind is one registered frame type.
type FrameKind struct {
	Type  MsgType
	Owner string // "transport", "control" or "ring"
	Name  string
}

// Frames lists every frame type, in the order of their values.
func Frames() []FrameKind {
	fs := []FrameKind{
		{MsgHello, "transport", "Hello"},
		{MsgError, "transport", "Error"},
		{MsgPing, "transport", "Ping"},
		{MsgPong, "transport", "Pong"},
		{MsgUnpair, "transport", "Unpair"},
		{MsgPakeA, "transport", "PakeA"},
		{MsgPakeB, "transport", "PakeB"},
		{MsgPakeConfirm, "transport", "PakeConfirm"},
		{MsgPairOK, "transport", "PairOK"},
		{MsgProfileAsk, "control", "ProfileAsk"},
		{MsgProfile, "control", "Profile"},
		{MsgJobAsk, "control", "JobAsk"},
		{MsgJobReady, "control", "JobReady"},
	}
	for _, r := range []struct {
		t    wire.Type
		name string
	}{
		{wire.TypePlanInstall, "PlanInstall"}, {wire.TypePlanAck, "PlanAck"}, {wire.TypeCommit, "Commit"},
		{wire.TypeActivation, "Activation"}, {wire.TypeToken, "Token"}, {wire.TypeGoodbye, "Goodbye"},
		{wire.TypeSliceRequest, "SliceRequest"}, {wire.TypeSliceChunk, "SliceChunk"}, {wire.TypeSliceList, "SliceList"},
		{wire.TypeJobStart, "JobStart"}, {wire.TypeJobAck, "JobAck"}, {wire.TypeJobLink, "JobLink"},
		{wire.TypeDeviceStats, "DeviceStats"},
	} {
		fs = append(fs, FrameKind{MsgType(r.t), "ring", r.name})
	}
	return fs
}
