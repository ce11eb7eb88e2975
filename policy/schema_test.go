package policy

import (
	"reflect"
	"testing"
)

// TestEngineTakesNoCallbacks: the engine is configured with values and
// hands out values. No option is a function (a callback the engine would
// run, as Options.CompileScope did on every scope cache miss of a request),
// and a Scope holds no slot of its user's type (the compiled SQL that
// storage's callback put there): storage translates a Scope itself and
// keeps its SQL by Scope.Key. The one thing the engine asks of its user,
// Schema.CheckScope, it asks while it checks a policy set (TestScopeCompile
// shows it is never asked on a request).
func TestEngineTakesNoCallbacks(t *testing.T) {
	for f := range reflect.TypeFor[Options]().Fields() {
		if f.Type.Kind() == reflect.Func {
			t.Errorf("Options.%s is a function (%s): a callback from the engine into its user", f.Name, f.Type)
		}
	}
	for f := range reflect.TypeFor[Scope]().Fields() {
		if f.Type.Kind() == reflect.Interface || f.Type.Kind() == reflect.Func {
			t.Errorf("Scope.%s (%s) is a slot for its user's form of the scope: its user keeps that itself", f.Name, f.Type)
		}
	}
}
