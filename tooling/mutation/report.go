package mutation

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// write prints the score and every surviving and equivalent mutant.
func (r Report) write(w io.Writer) {
	perFile := map[string][4]int{}
	for _, m := range r.Mutants {
		c := perFile[m.File]
		switch m.Outcome {
		case "killed":
			c[0]++
		case "survived":
			c[1]++
		case "equivalent":
			c[2]++
		case "compile-error":
			c[3]++
		}
		perFile[m.File] = c
	}
	for _, f := range slices.Sorted(maps.Keys(perFile)) {
		c := perFile[f]
		fmt.Fprintf(w, "%s: %d/%d killed, %d survived, %d equivalent, %d compile errors (not counted)\n", f, c[0], c[0]+c[1], c[1], c[2], c[3])
	}
	for _, m := range r.Mutants {
		switch m.Outcome {
		case "survived":
			fmt.Fprintf(w, "SURVIVED %s:%d (rule %s) [%s] %s: %s\n    original: %s\n    mutated:  %s\n", m.File, m.Line, m.Rule, m.ID, m.Kind, m.Mutation, m.Original, m.Mutated)
		case "equivalent":
			fmt.Fprintf(w, "equivalent %s:%d (rule %s) [%s] %s: %s (%s)\n", m.File, m.Line, m.Rule, m.ID, m.Kind, m.Mutation, m.Reason)
		}
	}
	fmt.Fprintf(w, "mutation score %.2f%%: %d of %d mutants killed, %d survived, %d equivalent, %d compile errors (not counted); %d workers, %s\n",
		r.Score, r.Killed, r.Killed+r.Survived, r.Survived, r.Equivalent, r.CompileErrors, r.Workers, r.Duration.Round(time.Millisecond))
}
