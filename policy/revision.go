package policy

// EmbeddedRevision returns the revision of the embedded policy set, the
// one Engine.Revision reports when no directory replaces it, without
// compiling the set (for `fleetapi version`).
func EmbeddedRevision() (string, error) {
	set, err := loadPolicySet("")
	if err != nil {
		return "", err
	}
	return set.revision(), nil
}
