package brokers

// GiveUpper is a producer that holds a slot per unconfirmed publish (its
// window) and is told when the application gives a publish up: no
// confirm within producer.confirm_timeout. The slot goes to the next
// publish then, as for any other unknown outcome, so a confirm that never
// comes (confirm-lost) cannot keep the window full for good. The
// publish's done is still called once, when the client hears its outcome
// or closes, so a late confirm is recorded.
type GiveUpper interface {
	// GiveUp frees the window slot of the publish of intent's attempt,
	// if it holds one; it does nothing for a publish already answered.
	GiveUp(intent, attempt int)
}
