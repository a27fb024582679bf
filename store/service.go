package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/dqbench/dqbench/history"
)

// Service is the external service a call effect calls: an HTTP server on
// 127.0.0.1 (a random port), run by dqbench for one variant, that records
// every call it receives. POST /payments takes effect once per call; a
// call with an Idempotency-Key header takes effect only the first time
// that key comes, and a later call with it gets the first call's response,
// as payment APIs that honour the header do.
type Service struct {
	srv    *http.Server
	url    string
	client *http.Client
	done   chan struct{}

	mu       sync.Mutex
	calls    []history.Call
	first    map[string][]byte // key → the first response's body
	payments int
}

// IdempotencyKey is the header a call-with-key effect sends.
const IdempotencyKey = "Idempotency-Key"

// StartService listens on 127.0.0.1 at a port the system picks and serves
// until Close.
func StartService() (*Service, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the external service: %w", err)
	}
	s := &Service{
		url:    "http://" + ln.Addr().String() + "/payments",
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		done:   make(chan struct{}),
		first:  map[string][]byte{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// payment is a call's body, and what the service answers.
type payment struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
	// Payment is the service's number for the effect it took (answers only).
	Payment int `json:"payment,omitempty"`
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/payments" {
		http.Error(w, "POST /payments only", http.StatusNotFound)
		return
	}
	var p payment
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&p); err != nil {
		http.Error(w, "undecodable payment: "+err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get(IdempotencyKey)
	s.mu.Lock()
	body, replay := s.first[key] // never for "": no key, no replay
	if !replay {
		s.payments++
		p.Payment = s.payments
		body, _ = json.Marshal(p)
		if key != "" {
			s.first[key] = body
		}
	}
	s.calls = append(s.calls, history.Call{Intent: p.Intent, Key: key, Replayed: replay})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !replay {
		w.WriteHeader(http.StatusCreated)
	}
	w.Write(body)
}

// Pay calls the service for e, with an Idempotency-Key header when key is
// not "". It returns the service's number for the effect (the first
// call's, for a repeated key).
func (s *Service) Pay(ctx context.Context, e Effect, key string) (int, error) {
	body, _ := json.Marshal(payment{Intent: e.Intent, Account: e.Account, Amount: e.Amount})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(IdempotencyKey, key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("call the external service for intent %d: %w", e.Intent, err)
	}
	defer resp.Body.Close()
	var p payment
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("external service answered intent %d with %s: %s", e.Intent, resp.Status, bytes.TrimSpace(msg))
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return 0, fmt.Errorf("external service's answer for intent %d: %w", e.Intent, err)
	}
	return p.Payment, nil
}

// Calls returns every call received so far, in order.
func (s *Service) Calls() []history.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]history.Call(nil), s.calls...)
}

// Close stops the server and waits for it.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	s.client.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
