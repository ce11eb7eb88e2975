package synth

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fleetapi/fleetapi/storage"
)

// Random streams of the generator: each table draws from its own stream,
// so that a change to one table's rows leaves the others as they were.
const (
	streamAccounts uint64 = iota + 1
	streamDevices
	streamGrants
	streamServices
	streamReports
	streamEvents
	streamPassengers
)

// genPlan is the shape of a generated data set, decided before any row is
// written: the account tree, who owns which device, and the accounts that
// get the harness tokens. Account ids are assigned here (1 is the admin,
// then managers, users, subaccounts) and written explicitly by COPY.
type genPlan struct {
	cfg Config
	// userManager[u] is the manager index of user u; userFlags[u] its state.
	userManager []int
	userFlags   []userFlag
	// subParent[s] is the user index of subaccount s, subPrivileges[s] its
	// privileges.
	subParent     []int
	subPrivileges [][]string
	// deviceOwner[d] is the user index owning device d; userDevices[u]
	// lists user u's devices in ascending order.
	deviceOwner []int
	userDevices [][]int
	deviceType  []int
	imeis       []string
	odometer    []int64
	engineHours []int64
	// bigManager, harnessUser and harnessSub get the harness tokens.
	bigManager, harnessUser, harnessSub int
}

type userFlag uint8

const (
	userInactive userFlag = 1 << iota
	userReadOnly
	userExpired
)

func (p *genPlan) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(p.cfg.Seed, stream))
}

func (p *genPlan) adminID() int64           { return 1 }
func (p *genPlan) managerID(m int) int64    { return int64(2 + m) }
func (p *genPlan) userID(u int) int64       { return int64(2 + p.cfg.Managers + u) }
func (p *genPlan) subaccountID(s int) int64 { return int64(2 + p.cfg.Managers + p.cfg.Users + s) }

func newGenPlan(cfg Config) *genPlan {
	p := &genPlan{cfg: cfg}
	r := p.rng(streamAccounts)

	// Users per manager fall off as 1/(rank+1): a few resellers hold most
	// of the fleet, as on a real platform.
	p.userManager = make([]int, 0, cfg.Users)
	for m, n := range zipfCounts(cfg.Users, cfg.Managers) {
		for range n {
			p.userManager = append(p.userManager, m)
		}
	}
	r.Shuffle(len(p.userManager), func(i, j int) { p.userManager[i], p.userManager[j] = p.userManager[j], p.userManager[i] })
	p.userFlags = make([]userFlag, cfg.Users)
	for u := range p.userFlags {
		switch {
		case u%97 == 96:
			p.userFlags[u] = userInactive
		case u%89 == 88:
			p.userFlags[u] = userReadOnly
		case u%83 == 82:
			p.userFlags[u] = userExpired
		}
	}
	p.bigManager = 0
	p.harnessUser = -1
	for u, m := range p.userManager {
		if m == p.bigManager && p.userFlags[u] == 0 {
			p.harnessUser = u
			break
		}
	}
	if p.harnessUser < 0 { // only flagged users under the big manager: clear one
		p.harnessUser = slices.Index(p.userManager, p.bigManager)
		p.userFlags[p.harnessUser] = 0
	}

	// Subaccounts: the first belongs to the harness user and holds both
	// privileges; the others have a random parent and privileges.
	p.subParent = make([]int, cfg.Subaccounts)
	p.subPrivileges = make([][]string, cfg.Subaccounts)
	privs := [][]string{{}, {"reports"}, {"event_notifications"}, {"event_notifications", "reports"}}
	for s := range p.subParent {
		p.subParent[s] = r.IntN(cfg.Users)
		p.subPrivileges[s] = privs[r.IntN(len(privs))]
	}
	p.subParent[0] = p.harnessUser
	p.subPrivileges[0] = privs[3]
	p.harnessSub = 0

	p.planDevices()
	return p
}

// planDevices spreads the devices evenly over users, in shuffled order so
// that a user's rows are scattered over the tables as they are after years
// of inserts, and draws each device's type and current readings.
func (p *genPlan) planDevices() {
	cfg := p.cfg
	r := p.rng(streamDevices)
	p.deviceOwner = make([]int, 0, cfg.Devices)
	for u := range cfg.Users {
		for range cfg.Devices / cfg.Users {
			p.deviceOwner = append(p.deviceOwner, u)
		}
	}
	p.deviceOwner = append(p.deviceOwner, r.Perm(cfg.Users)[:cfg.Devices%cfg.Users]...)
	r.Shuffle(len(p.deviceOwner), func(i, j int) { p.deviceOwner[i], p.deviceOwner[j] = p.deviceOwner[j], p.deviceOwner[i] })
	p.userDevices = make([][]int, cfg.Users)
	p.deviceType = make([]int, cfg.Devices)
	p.odometer = make([]int64, cfg.Devices)
	p.engineHours = make([]int64, cfg.Devices)
	weights := vehicleWeights()
	for d, u := range p.deviceOwner {
		p.userDevices[u] = append(p.userDevices[u], d)
		t := weightedIndex(r, weights)
		p.deviceType[d] = t
		if vehicleTypes[t].hoursOnly {
			p.odometer[d] = int64(r.IntN(2_000))
		} else {
			p.odometer[d] = int64(5_000 + r.IntN(600_000))
		}
		p.engineHours[d] = int64(100 + r.IntN(25_000))
	}
}

// zipfCounts splits n over k buckets with weights 1/(i+1), exactly (the
// largest remainders get the rest).
func zipfCounts(n, k int) []int {
	var h float64
	for i := range k {
		h += 1 / float64(i+1)
	}
	counts := make([]int, k)
	rem := make([]float64, k)
	left := n
	for i := range k {
		exact := float64(n) / float64(i+1) / h
		counts[i] = int(exact)
		rem[i] = exact - float64(counts[i])
		left -= counts[i]
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for i := 0; left > 0; i++ {
		counts[order[i%k]]++
		left--
	}
	return counts
}

// weightedIndex draws an index with probability proportional to its weight.
func weightedIndex(r *rand.Rand, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := r.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

// Pool sizes of the mixed workload's tokens: at most this many users and
// subaccounts each (fewer when the data set has fewer usable ones); every
// manager gets one.
const (
	poolUsers       = 60
	poolSubaccounts = 60
)

// tokenHolder is an account that gets a harness token.
type tokenHolder struct {
	role     string
	username string
	id       int64
	pool     bool
}

// tokenHolders are the four fixed harness accounts, then the pool of the
// mixed workload: every manager, up to poolUsers usable users and up to
// poolSubaccounts subaccounts of usable users, spread evenly over the
// account ids so that they fall under managers of every size.
func (p *genPlan) tokenHolders() []tokenHolder {
	out := []tokenHolder{
		{"admin", "gen-admin", p.adminID(), false},
		{"manager", managerName(p.bigManager), p.managerID(p.bigManager), false},
		{"user", userName(p.harnessUser), p.userID(p.harnessUser), false},
		{"subaccount", subaccountName(p.harnessSub), p.subaccountID(p.harnessSub), false},
	}
	for m := range p.cfg.Managers {
		out = append(out, tokenHolder{"manager", managerName(m), p.managerID(m), true})
	}
	var users, subs []int
	for u, f := range p.userFlags {
		if f == 0 {
			users = append(users, u)
		}
	}
	for s, u := range p.subParent {
		if p.userFlags[u] == 0 {
			subs = append(subs, s)
		}
	}
	for _, u := range evenly(users, poolUsers) {
		out = append(out, tokenHolder{"user", userName(u), p.userID(u), true})
	}
	for _, s := range evenly(subs, poolSubaccounts) {
		out = append(out, tokenHolder{"subaccount", subaccountName(s), p.subaccountID(s), true})
	}
	return out
}

// evenly returns up to n elements of xs, evenly spaced.
func evenly(xs []int, n int) []int {
	if len(xs) <= n {
		return xs
	}
	out := make([]int, n)
	for i := range n {
		out[i] = xs[i*len(xs)/n]
	}
	return out
}

// createTokens creates the harness tokens, with random secrets.
func (p *genPlan) createTokens(ctx context.Context, s *storage.Store) ([]Token, error) {
	holders := p.tokenHolders()
	out := make([]Token, 0, len(holders))
	for _, r := range holders {
		name := "fleetops-bench-" + r.role
		if r.pool {
			name = "fleetops-bench-pool-" + r.role
		}
		secret, tok, err := s.CreateToken(ctx, storage.NewToken{
			Username: r.username, Name: name, Permissions: []string{"*"},
			RateLimit: TokenRateLimit,
		})
		if err != nil {
			return nil, fmt.Errorf("generate: token for %s: %w", r.username, err)
		}
		out = append(out, Token{Role: r.role, Username: r.username, AccountID: tok.AccountID, TokenID: tok.ID, Token: secret, Pool: r.pool})
	}
	return out, nil
}

func managerName(m int) string    { return fmt.Sprintf("gen-manager-%03d", m+1) }
func userName(u int) string       { return fmt.Sprintf("gen-user-%05d", u+1) }
func subaccountName(s int) string { return fmt.Sprintf("gen-sub-%05d", s+1) }
