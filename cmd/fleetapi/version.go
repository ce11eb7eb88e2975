package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/fleetapi/fleetapi/policy"
)

// buildVersion is what the binary says about itself: its module version,
// the commit it was built from (from the VCS stamp of `go build`), the Go
// version and the revision of the embedded policy set.
type buildVersion struct {
	Version, Commit, CommitTime, GoVersion, PolicyRevision string
	Modified                                               bool
}

// readBuildVersion reads the build information of the running binary.
func readBuildVersion() (buildVersion, error) {
	bi, _ := debug.ReadBuildInfo()
	v := versionFrom(bi)
	rev, err := policy.EmbeddedRevision()
	if err != nil {
		return v, err
	}
	v.PolicyRevision = rev
	return v, nil
}

// versionFrom reads the version, the VCS stamp and the Go version from
// bi (nil when the binary has none).
func versionFrom(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version()}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(_ context.Context, args []string, _ func(string) string, con console) error {
	cmd := newCommand("version", "", "Print the version, the commit the binary was built from, the Go version and the revision of the embedded policy set (the policy_revision of the decision log).")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	v, err := readBuildVersion()
	if err != nil {
		return fmt.Errorf("version: %w", err)
	}
	commit := v.Commit
	if v.CommitTime != "" {
		commit += " (" + v.CommitTime + ")"
	}
	if v.Modified {
		commit += ", with uncommitted changes"
	}
	_, err = fmt.Fprintf(con.out, "fleetapi %s\ncommit:          %s\ngo:              %s\npolicy revision: %s\n",
		v.Version, commit, v.GoVersion, v.PolicyRevision)
	return err
}
