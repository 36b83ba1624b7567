package storagetest

// publicAuthCases are the cases of one-time mail tokens, PIN challenges and the PIN gate.
func publicAuthCases() []storageCase {
	return nil
}
