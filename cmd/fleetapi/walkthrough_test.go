package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestManagementWalkthroughRuns: the management walkthrough that `dev`
// prints, cut out of its real output and pasted into bash (curl and sed
// only), works against that server: every line succeeds except the two
// the walkthrough shows being refused, the customer and its subaccount
// exist where they should, the integration token reads exactly the
// granted device and holds only "GET *", and the audit trail has the six
// changes, none holding the secrets.
func TestManagementWalkthroughRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	db := storagetest.New(t)
	addr, printed := startDev(t, db, walkthroughEnd)
	i, j := strings.Index(printed, walkthroughStart), strings.Index(printed, walkthroughEnd)
	if i < 0 || j < i {
		t.Fatalf("dev does not print the walkthrough:\n%s", printed)
	}
	script := printed[i : j+len(walkthroughEnd)]
	if script+"\n" != managementWalkthrough(addr) {
		t.Fatalf("dev prints another walkthrough than managementWalkthrough:\n%s", script)
	}
	api := "http://" + addr + "/api/v2"

	// What the reader would see, then the variables the lines set.
	cmd := exec.Command("bash", "-c", script+"\nprintf '\\nRESULT %s %s %s\\n' \"$CUST\" \"$SUB\" \"${INT_AUTH#Authorization: Bearer }\"\n")
	b, err := cmd.CombinedOutput()
	got := string(b)
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, got)
	}
	if n := strings.Count(got, `"success":false`); n != 2 ||
		!strings.Contains(got, `"code":"TOKEN_PERMISSION_DENIED"`) || !strings.Contains(got, `"reason":"own_account"`) {
		t.Fatalf("want exactly the two refusals the walkthrough shows, got %d:\n%s", n, got)
	}
	if strings.Contains(got, "curl:") || strings.Contains(got, "command not found") {
		t.Fatalf("a line failed:\n%s", got)
	}
	m := regexp.MustCompile(`RESULT ([0-9]+) ([0-9]+) (flt_\S+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("an id or the secret was not captured:\n%s", got)
	}
	cust, sub, secret := m[1], m[2], m[3]

	// The integration token: the subaccount, "GET *", the granted device only.
	var me struct {
		Data struct {
			ID          json.Number `json:"id"`
			Username    string      `json:"username"`
			Type        string      `json:"type"`
			ManagerID   json.Number `json:"manager_id"`
			Permissions struct {
				Token      []string `json:"token"`
				Privileges []string `json:"privileges"`
			} `json:"permissions"`
		} `json:"data"`
	}
	getJSON(t, api+"/me", secret, &me)
	d := me.Data
	if d.ID.String() != sub || d.Username != "initech-api" || d.Type != "subaccount" || d.ManagerID.String() != cust ||
		!slices.Equal(d.Permissions.Token, []string{"GET *"}) || !slices.Equal(d.Permissions.Privileges, []string{"reports"}) {
		t.Fatalf("the integration token is %+v (customer %s, subaccount %s)", d, cust, sub)
	}
	var objs struct {
		Data []struct {
			IMEI      string      `json:"imei"`
			AccountID json.Number `json:"account_id"`
		} `json:"data"`
	}
	getJSON(t, api+"/objects", secret, &objs)
	if len(objs.Data) != 1 || objs.Data[0].IMEI != "490154203237518" || objs.Data[0].AccountID.String() != cust {
		t.Fatalf("the integration token sees %+v", objs.Data)
	}

	// The customer is a user under the demo manager fleetco.
	var acc struct {
		Data struct {
			Username  string `json:"username"`
			Type      string `json:"type"`
			ManagerID int64  `json:"manager_id"`
		} `json:"data"`
	}
	getJSON(t, api+"/accounts/"+cust, demodata.Tokens()[0].Secret, &acc)
	var fleetco struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	getJSON(t, api+"/me", tokenOf(t, "fleetco"), &fleetco)
	if acc.Data.Username != "initech" || acc.Data.Type != "user" || acc.Data.ManagerID != fleetco.Data.ID {
		t.Fatalf("the customer is %+v, want a user under fleetco (%d)", acc.Data, fleetco.Data.ID)
	}

	// The audit trail: the six changes, in order.
	var audit struct {
		Data []struct {
			Action  string          `json:"action"`
			Changes json.RawMessage `json:"changes"`
		} `json:"data"`
	}
	getJSON(t, api+"/audit-events?sort=id&order=asc&per_page=100", demodata.Tokens()[0].Secret, &audit)
	var actions []string
	for _, e := range audit.Data {
		actions = append(actions, e.Action)
		if strings.Contains(string(e.Changes), secret) {
			t.Fatalf("an audit event holds a secret: %s", e.Changes)
		}
	}
	want := []string{"account.create", "object.create", "token.create", "account.create", "grants.replace", "token.create"}
	if !slices.Equal(actions, want) {
		t.Fatalf("audit trail %v, want %v", actions, want)
	}
}

// TestManagementDocHoldsWalkthrough: docs/management.md shows the very
// lines dev prints (for the default address), so the documented
// walkthrough is the tested one.
func TestManagementDocHoldsWalkthrough(t *testing.T) {
	doc, err := os.ReadFile("../../docs/management.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := managementWalkthrough("127.0.0.1:8080"); !strings.Contains(string(doc), want) {
		t.Fatalf("docs/management.md does not hold the walkthrough dev prints:\n%s", want)
	}
}

// startDev runs `fleetapi dev` on db on a free port with the extra flags
// args, until the test ends, and returns its address and what it printed
// once that holds until (it fails the test if dev stops or takes a minute).
func startDev(t *testing.T, db *storagetest.DB, until string, args ...string) (addr, printed string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- mainWith(ctx, append([]string{"dev", "--database-url", db.URL, "--addr", "127.0.0.1:0"}, args...), envOf(nil), &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("dev exited %d\n%s", code, errb.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if m := listenRe.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), until) {
			return m[1], out.String()
		}
		select {
		case code := <-done:
			done <- code // for the cleanup
			t.Fatalf("dev exited %d:\n%s\n%s", code, out.String(), errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("dev did not start:\n%s\n%s", out.String(), errb.String())
	return "", ""
}

// tokenOf is the secret of the first demo token of the demo account username.
func tokenOf(t *testing.T, username string) string {
	t.Helper()
	for _, tok := range demodata.Tokens() {
		if tok.Username == username {
			return tok.Secret
		}
	}
	t.Fatalf("no demo token for %q", username)
	return ""
}

// getJSON GETs url with the bearer token, wants 200 and decodes the body into v.
func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}
