package storagetest

// permissionCases are the cases of permission records and their audit log.
func permissionCases() []storageCase {
	return nil
}
