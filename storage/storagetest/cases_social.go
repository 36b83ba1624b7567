package storagetest

// socialCases are the cases of linked social identities.
func socialCases() []storageCase {
	return nil
}
