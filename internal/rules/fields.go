package rules

import (
	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// argFields lists the top-level argument names an expression reads:
// args.name, has(args.name) and args["name"].
func argFields(a *cel.Ast) []string {
	var out []string
	root := celast.NavigateAST(a.NativeRep())
	for _, e := range celast.MatchDescendants(root, func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.SelectKind || e.Kind() == celast.CallKind
	}) {
		switch e.Kind() {
		case celast.SelectKind:
			sel := e.AsSelect()
			if isArgs(sel.Operand()) {
				out = append(out, sel.FieldName())
			}
		case celast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != operators.Index || len(call.Args()) != 2 || !isArgs(call.Args()[0]) {
				continue
			}
			if k := call.Args()[1]; k.Kind() == celast.LiteralKind {
				if s, ok := k.AsLiteral().(types.String); ok {
					out = append(out, string(s))
				}
			}
		}
	}
	return out
}

func isArgs(e celast.Expr) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == "args"
}
