package negotiate

import (
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Profile is a protocol profile (seed 002 §8.2.2–8.2.4, §8.3.2): how much
// of the protocol an agent implements. Each includes the one below.
//
//   - tp_core: tier 3 served ("the minimum of any TP implementation"),
//     signed envelopes (basic), and every basic standard interface of seed
//     000 §6.2 implemented (compliant, §5.4);
//   - tp_secure: tp_core, tier 2 served (enabled, with an LLM backend),
//     and the standard security level offered (private fields encrypted);
//   - tp_full: tp_secure, tier 1 served (enabled, with at least one tier-1
//     routine), and the high level offered (whole payloads encrypted).
//
// The seed names tier 1 "必备" for tp_full and the default levels of
// tp_core (basic) and tp_secure (standard); that tp_full also needs high
// is this implementation's reading: the fullest profile offers every level.
type Profile string

// The three profiles, lowest first.
const (
	ProfileCore   Profile = "tp_core"
	ProfileSecure Profile = "tp_secure"
	ProfileFull   Profile = "tp_full"
)

// Profiles lists the profiles, lowest first.
func Profiles() []Profile { return []Profile{ProfileCore, ProfileSecure, ProfileFull} }

func (p Profile) rank() int {
	switch p {
	case ProfileCore:
		return 1
	case ProfileSecure:
		return 2
	case ProfileFull:
		return 3
	}
	return 0
}

// Known reports whether p is one of the three profiles.
func (p Profile) Known() bool { return p.rank() != 0 }

// AtLeast reports whether p includes o. No profile ("") includes none.
func (p Profile) AtLeast(o Profile) bool { return p.rank() >= o.rank() && p.rank() > 0 }

// DefaultSecurity is the level a request requiring p gets when it names
// none (seed 002 §8.3.2: basic for tp_core, standard for tp_secure and
// above).
func (p Profile) DefaultSecurity() SecurityLevel {
	if p.rank() >= ProfileSecure.rank() {
		return Standard
	}
	return Basic
}

// ReasonProfile is the reason of a refusal for a required profile.
const ReasonProfile = "profile_not_met"

// lack is one requirement of a profile the responder does not meet, and
// the code that names it in seed 002 §8.6.
type lack struct {
	profile Profile
	what    string
	code    wire.ErrorCode
}

// lacks lists what this responder misses of every profile, lowest
// profile first.
func (r *Responder) lacks() []lack {
	maxLevel := r.MaxSecurity
	if maxLevel == "" {
		maxLevel = High
	}
	var out []lack
	if !r.Compliant {
		out = append(out, lack{ProfileCore, "the basic standard interfaces", wire.CodeNegNoCommonTransp})
	}
	if !r.enabled(Tier2) || !r.LLM {
		out = append(out, lack{ProfileSecure, string(Tier2), wire.CodeNegNoLLM})
	}
	if !maxLevel.AtLeast(Standard) {
		out = append(out, lack{ProfileSecure, "security_level " + string(Standard), wire.CodeNegSecurity})
	}
	if !r.enabled(Tier1) || r.Routines == 0 {
		out = append(out, lack{ProfileFull, string(Tier1), wire.CodeNegTier1Mismatch})
	}
	if !maxLevel.AtLeast(High) {
		out = append(out, lack{ProfileFull, "security_level " + string(High), wire.CodeNegSecurity})
	}
	return out
}

// Profile is the highest profile this responder meets, from what it
// serves (tiers, LLM backend, tier-1 routines, security levels, basic
// interfaces); "" when it meets none.
func (r *Responder) Profile() Profile {
	best := ProfileFull
	for _, l := range r.lacks() {
		if b := lower(l.profile); b.rank() < best.rank() {
			best = b
		}
	}
	return best
}

// lower is the profile below p ("" below tp_core).
func lower(p Profile) Profile {
	if p.rank() <= 1 {
		return ""
	}
	return Profiles()[p.rank()-2]
}

// meets refuses a request whose required_profile this responder does not
// meet: the code of the first requirement it misses (TP-NEG006 for tier 2,
// TP-NEG004 for a security level, TP-NEG005 for tier 1, TP-NEG003 for the
// basic interfaces), what it misses and its own profile in the details.
func (r *Responder) meets(want Profile) *Rejection {
	if want == "" {
		return nil
	}
	var missing []string
	var code wire.ErrorCode
	for _, l := range r.lacks() {
		if l.profile.rank() <= want.rank() {
			if code == "" {
				code = l.code
			}
			missing = append(missing, l.what)
		}
	}
	if code == "" {
		return nil
	}
	have := r.Profile()
	shown := string(have)
	if shown == "" {
		shown = "none"
	}
	rej := reject(code, ReasonProfile, &Proposal{CandidateTiers: r.servable()},
		"%s is required and this agent's profile is %s: it lacks %s", want, shown, strings.Join(missing, ", "))
	rej.Profile, rej.Missing = have, missing
	return rej
}

// checkProfile is CheckRequest's part for required_profile.
func checkProfile(req *Request) *Rejection {
	if req.RequiredProfile != "" && !req.RequiredProfile.Known() {
		return reject(wire.CodeInvalidParams, "invalid_profile", nil,
			"required_profile %q is not %s", req.RequiredProfile, fmt.Sprint(Profiles()))
	}
	return nil
}
