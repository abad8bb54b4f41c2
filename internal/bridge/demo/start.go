package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

// Path is where Start serves the MCP endpoint.
const Path = "/mcp"

// stopTimeout bounds how long stop waits for open streams to finish.
const stopTimeout = 2 * time.Second

// Start serves the demo at http://<addr>/mcp until ctx is done or stop is
// called. addr "" listens on a free loopback port. The returned Manager is
// the fault-injection handle (TerminateAll, SessionCount). stop is safe to
// call more than once and waits for the server to finish.
func Start(ctx context.Context, addr string, opts server.Options) (url string, mgr *server.Manager, stop func(), err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	mgr, err = server.New(New(opts.Logger), opts)
	if err != nil {
		return "", nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, nil, fmt.Errorf("listening for the demo server: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, mgr)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if opts.Logger != nil {
		srv.ErrorLog = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)
	} else {
		srv.ErrorLog = log.New(io.Discard, "", 0)
	}

	runCtx, cancel := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		mgr.Run(runCtx)
	}()
	<-mgr.Ready()
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && opts.Logger != nil {
			opts.Logger.Error("demo server stopped", "err", err)
		}
	}()
	go func() {
		<-runCtx.Done()
		// Ending the sessions first ends their streams, so Shutdown is quick.
		<-runDone
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer scancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	stop = func() {
		cancel()
		<-runDone
		<-serveDone
	}
	return "http://" + ln.Addr().String() + Path, mgr, stop, nil
}
