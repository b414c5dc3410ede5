package controller_test

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

var faultSeed = flag.Uint64("shard.faultseed", 0, "seed of the fault-injecting proxy of TestEnvtest/Shard/faults (0: drawn from the clock, and logged)")

// faultProxy is a reverse proxy on a loopback address between the
// managers and the API server that answers a few percent of requests
// itself: 409 Conflict (writes only), 429 Too Many Requests with
// Retry-After, 500, or late (forwarded after a pause); and cuts every
// watch after a few seconds. Its randomness is seeded.
type faultProxy struct {
	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int
}

// startFaultProxy starts a proxy in front of cfg's API server, stopped
// when t ends, and returns the configuration that reaches the server
// through it.
func startFaultProxy(t *testing.T, cfg *rest.Config, seed uint64) *rest.Config {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     tr,
		FlushInterval: -1, // watches stream
		// A watch cut or a request refused is what the proxy is for.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		t.Logf("FAULTS seed=%d %s", seed, p.summary())
	})
	return &rest.Config{Host: "http://" + ln.Addr().String(), QPS: cfg.QPS, Burst: cfg.Burst, UserAgent: cfg.UserAgent}
}

// draw returns the fault for a request, "" for none, and for a watch how
// long it lasts.
func (p *faultProxy) draw(method string, watch bool) (string, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.rng.Float64()
	write := method != http.MethodGet
	fault := ""
	switch {
	case watch:
		p.counts["watches_cut"]++
		return "", time.Duration(2000+p.rng.IntN(8000)) * time.Millisecond
	case write && x < 0.02:
		fault = "conflict"
	case x < 0.04:
		fault = "throttle"
	case x < 0.06:
		fault = "error"
	case x < 0.08:
		fault = "slow"
	}
	p.counts["requests"]++
	if fault != "" {
		p.counts[fault]++
	}
	return fault, time.Duration(100+p.rng.IntN(700)) * time.Millisecond
}

func (p *faultProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
		fault, d := p.draw(r.Method, watch)
		switch fault {
		case "conflict":
			status(w, http.StatusConflict, metav1.StatusReasonConflict, "injected: the object has been modified")
			return
		case "throttle":
			w.Header().Set("Retry-After", "1")
			status(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "injected: too many requests")
			return
		case "error":
			status(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "injected: internal error")
			return
		case "slow":
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if watch {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// status answers with a metav1.Status, as the API server does.
func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	})
}

// summary returns the faults injected, as key=count pairs.
func (p *faultProxy) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for k, v := range p.counts {
		parts = append(parts, k+"="+strconv.Itoa(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
