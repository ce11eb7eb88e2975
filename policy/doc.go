// Package policy decides who may do what. It embeds the Rego policy set
// (policy/rego), prepares its queries once per policy revision, and answers
// two questions: Decide (may this principal call this route?) and Scope
// (which rows of a resource may it see, as a condition tree that storage
// turns into SQL). It also keeps the decision log and explains decisions.
package policy
