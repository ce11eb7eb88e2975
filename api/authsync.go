package api

import (
	"context"
	"log/slog"
	"time"
)

// authSyncTimeout bounds how long a management write waits for its own
// replica's authentication cache to catch up with it.
const authSyncTimeout = 2 * time.Second

// authChanged waits, after a committed management write that changes a
// principal, until this replica's authentication cache has applied it
// (Config.AuthSync). The write has happened: a failure to wait is logged,
// not answered, and leaves the change to the listener, which applies it
// on delivery or distrusts the cache.
func (s *Server) authChanged(ctx context.Context) {
	if s.cfg.AuthSync == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authSyncTimeout)
	defer cancel()
	if err := s.cfg.AuthSync(ctx); err != nil {
		s.log.WarnContext(ctx, "auth cache sync after a management write", slog.Any("error", err))
	}
}
