package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// mqttScenario is the pipeline on the embedded MQTT broker at QoS 1 with a
// persistent session, no faults and one dedup-table variant on SQLite.
const mqttScenario = `
version: 1
name: bench-mqtt
messages: %d
deadline: 60m
drain: 30s
broker: {kind: mqtt, mode: embedded, qos: 1, subscription_qos: 1, clean_session: false}
store: sqlite
producer: {window: %d}
consumer: {instances: 1, ack: after-process}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// runMQTTPipeline runs dqbench's pipeline on n intents over MQTT.
func runMQTTPipeline(n int) (time.Duration, error) {
	return runScenario("bench-mqtt.yaml", fmt.Appendf(nil, mqttScenario, n, window), n)
}

// startMochi starts a mochi-mqtt server on a loopback port, as the
// pipeline's embedded broker (same options, every client allowed).
func startMochi() (*mochi.Server, string, error) {
	srv := mochi.New(&mochi.Options{
		Logger:                 slog.New(slog.NewTextHandler(io.Discard, nil)),
		SysTopicResendInterval: 86400,
	})
	if err := srv.AddHook(new(allowAll), nil); err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	if err := srv.AddListener(listeners.NewNet("raw", ln)); err != nil {
		ln.Close()
		return nil, "", err
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, "", err
	}
	return srv, "tcp://" + ln.Addr().String(), nil
}

// allowAll lets every client in and allows every topic, as the
// pipeline's broker hook does.
type allowAll struct{ mochi.HookBase }

func (*allowAll) ID() string { return "allow-all" }

func (*allowAll) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (*allowAll) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }

func (*allowAll) OnACLCheck(*mochi.Client, string, bool) bool { return true }

// pahoOpts are the pipeline's paho settings (brokers/mqtt): persistent
// session, ordered delivery to the handler, no auto-reconnect.
func pahoOpts(url, id string) *pahomqtt.ClientOptions {
	return pahomqtt.NewClientOptions().AddBroker(url).SetClientID(id).
		SetCleanSession(false).SetKeepAlive(30 * time.Second).
		SetConnectTimeout(5 * time.Second).SetWriteTimeout(10 * time.Second).
		SetOrderMatters(true).SetAutoReconnect(false)
}

func tokenErr(t pahomqtt.Token, what string) error {
	t.Wait()
	if err := t.Error(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// runRawMQTT is the hand-written MQTT loop: a fresh mochi-mqtt and a fresh
// SQLite file, a persistent QoS 1 subscription created first, a publisher
// at QoS 1 with at most window publishes unacknowledged, and a consumer
// that runs the per-message transaction (txStore) and then acks manually.
// Everything it starts is stopped before it returns.
func runRawMQTT(n int) (err error) {
	ctx := context.Background()
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	srv, url, err := startMochi()
	if err != nil {
		return err
	}
	defer srv.Close()
	st, err := openTxStore(ctx, dir+"/raw.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	msgs := make(chan pahomqtt.Message, n)
	sub := pahomqtt.NewClient(pahoOpts(url, "raw-s").SetAutoAckDisabled(true).
		SetDefaultPublishHandler(func(_ pahomqtt.Client, m pahomqtt.Message) { msgs <- m }))
	if err := tokenErr(sub.Connect(), "subscriber connect"); err != nil {
		return err
	}
	defer sub.Disconnect(50)
	if err := tokenErr(sub.Subscribe("raw/+", 1, nil), "subscribe"); err != nil {
		return err
	}

	pub := pahomqtt.NewClient(pahoOpts(url, "raw-p"))
	if err := tokenErr(pub.Connect(), "publisher connect"); err != nil {
		return err
	}
	defer pub.Disconnect(50)
	produced := make(chan error, 1)
	go func() {
		slots := make(chan struct{}, window)
		errc := make(chan error, 1)
		for i := 1; i <= n; i++ {
			slots <- struct{}{}
			v, _ := json.Marshal(newIntent(i))
			t := pub.Publish("raw/"+strconv.Itoa(i), 1, false, v)
			go func() {
				t.Wait()
				if err := t.Error(); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
				<-slots
			}()
		}
		for range window {
			slots <- struct{}{}
		}
		select {
		case err := <-errc:
			produced <- fmt.Errorf("publish: %w", err)
		default:
			produced <- nil
		}
	}()

	applied := 0
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for done := 0; done < n; done++ {
		var m pahomqtt.Message
		select {
		case m = <-msgs:
		case err := <-produced:
			if err != nil {
				return err
			}
			produced <- nil
			m = <-msgs
		case <-timeout.C:
			return fmt.Errorf("raw mqtt: %d of %d delivered within a minute", done, n)
		}
		var in intent
		if err := json.Unmarshal(m.Payload(), &in); err != nil {
			return fmt.Errorf("message %s: %w", m.Topic(), err)
		}
		ok, err := st.apply(ctx, strings.TrimPrefix(m.Topic(), "raw/"), in)
		if err != nil {
			return fmt.Errorf("intent %d: %w", in.Intent, err)
		}
		if ok {
			applied++
		}
		m.Ack()
	}
	if err := <-produced; err != nil {
		return err
	}
	if applied != n {
		return fmt.Errorf("raw mqtt loop applied %d effects, want %d", applied, n)
	}
	return nil
}

// BenchmarkMQTTVsRaw is BenchmarkPipelineVsRaw on MQTT: -bench.pairs
// interleaved pairs of the pipeline on the embedded mochi-mqtt (QoS 1,
// persistent session, window 256, dedup-table on SQLite, no faults) and a
// raw paho loop doing the same (same QoS, same window, the same
// per-message SQLite transaction, manual ack after it). Fixed costs are
// inside the timed region on both sides: each starts its own broker and
// SQLite file and stops them before its clock stops. It reports the median
// per-pair ratio pipeline/raw (goal: >= 0.8). It ignores b.N.
func BenchmarkMQTTVsRaw(b *testing.B) {
	n := *intents
	t := newTable("MQTT (embedded mochi-mqtt, QoS 1) on SQLite: the pipeline against a raw paho loop",
		fmt.Sprintf("%d interleaved pairs of %d intents: one `dedup-table` variant, persistent session, window %d, no faults, against a hand-written eclipse/paho.mqtt.golang loop doing the same per-message SQLite transaction and a manual ack; each side starts its own broker and SQLite file inside the timed region.", *pairs, n, window))
	var ratios, pipeRates, rawRates []float64
	for i := range *pairs {
		var pipe, raw time.Duration
		sides := []func() error{
			func() (err error) { pipe, err = runMQTTPipeline(n); return err },
			func() (err error) { raw, err = timed(func() error { return runRawMQTT(n) }); return err },
		}
		first := "pipeline"
		if i%2 == 1 {
			slices.Reverse(sides)
			first = "raw"
		}
		for _, f := range sides {
			runtime.GC()
			if err := f(); err != nil {
				b.Fatalf("pair %d: %v", i+1, err)
			}
		}
		ratios = append(ratios, raw.Seconds()/pipe.Seconds())
		pipeRates = append(pipeRates, float64(n)/pipe.Seconds())
		rawRates = append(rawRates, float64(n)/raw.Seconds())
		fmt.Printf("pair %d/%d (%s first): pipeline %v, raw %v, ratio %.3f\n", i+1, *pairs, first,
			pipe.Round(time.Millisecond), raw.Round(time.Millisecond), ratios[len(ratios)-1])
	}
	t.add("pipeline / raw", ratios)
	t.add("pipeline, intents/s", pipeRates)
	t.add("raw loop, intents/s", rawRates)
	t.print(os.Stdout)
	r, p, w := spreadOf(ratios), spreadOf(pipeRates), spreadOf(rawRates)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(r.median, "ratio-median")
	b.ReportMetric(r.min, "ratio-min")
	b.ReportMetric(r.max, "ratio-max")
	b.ReportMetric(p.median, "pipeline-intents/s")
	b.ReportMetric(w.median, "raw-intents/s")
}
