package mqtt

import (
	"context"
	"errors"

	"github.com/dqbench/dqbench/brokers"
)

// pahoGolang is eclipse/paho.golang (MQTT 5).
type pahoGolang struct{}

var errNoPahoGolang = errors.New("client paho.golang: not built yet")

func (pahoGolang) subscribe(ctx context.Context, d *dest) error { return errNoPahoGolang }
func (pahoGolang) producer(ctx context.Context, d *dest) (brokers.Producer, error) {
	return nil, errNoPahoGolang
}
func (pahoGolang) consumer(ctx context.Context, d *dest, gen int) (brokers.Consumer, error) {
	return nil, errNoPahoGolang
}
