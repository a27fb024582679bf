// Package qos2truth holds the raw-client ground truth of MQTT QoS 2 under
// one lost PUBREC, PUBREL or PUBCOMP (MQTT 3.1.1 §4.3.3): its test runs
// mochi-mqtt in-process with a hook of its own and the two client
// libraries directly, with no dqbench code, one message in flight and
// persistent sessions, and counts the duplicates each client hands its
// application. `make qos2-evidence` prints the table; docs/scenario.md
// compares it with dqbench's counts.
package qos2truth
