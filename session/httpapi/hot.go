package httpapi

import "time"

// defaultHotSessions and hotIdle are the defaults of Options.HotSessions
// and how long a session stays open unused, in the Handler's own keeper.
const (
	defaultHotSessions = 64
	hotIdle            = 5 * time.Minute
)
