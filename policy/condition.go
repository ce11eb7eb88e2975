package policy

// Op is the operator of a Condition node.
type Op string

// The operators of a condition tree. And, Or and Not are compounds over
// Children; the others compare Field with Value.
const (
	OpAnd        Op = "and"
	OpOr         Op = "or"
	OpNot        Op = "not"
	OpEq         Op = "eq"
	OpNe         Op = "ne"
	OpLt         Op = "lt"
	OpLte        Op = "lte"
	OpGt         Op = "gt"
	OpGte        Op = "gte"
	OpIn         Op = "in"
	OpStartsWith Op = "startswith"
	OpEndsWith   Op = "endswith"
	OpContains   Op = "contains"
)

// Condition is one node of a row-scope condition tree, compiled from the
// policy's UCAST output. Field is the column name without the resource
// prefix ("account_id", "manager_id", "granted_to").
type Condition struct {
	Op       Op          `json:"op"`
	Field    string      `json:"field,omitempty"`
	Value    any         `json:"value,omitempty"`
	Children []Condition `json:"children,omitempty"`
}
