package server

import (
	"log"
	"net/http"
	"time"
)

// Timeouts are the listener's connection timeouts (docs/http-api.md,
// "Timeouts"): a client that trickles its headers or its body, stops
// reading an answer, or holds an idle keep-alive connection loses it
// instead of holding a goroutine and a socket.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts are serve's. longest is the longest run an answer may
// wait for (the query timeout, or a Directory worker's): the write timeout
// is that plus a grace to write the answer out, so it never cuts a
// legitimate answer, streamed ones included. Without a longest run (no
// query time limit) there is no write timeout either.
func DefaultTimeouts(longest time.Duration) Timeouts {
	t := Timeouts{
		ReadHeader: 10 * time.Second,
		Read:       30 * time.Second, // the largest body, a 1 MiB query, takes well under a second
		Idle:       60 * time.Second,
	}
	if longest > 0 {
		t.Write = longest + 30*time.Second
	}
	return t
}

// HTTPServer is the listener's server for h.
func HTTPServer(h http.Handler, t Timeouts, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ErrorLog:          errorLog,
	}
}
