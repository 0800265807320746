package jobspec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	yaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"golang.org/x/crypto/bcrypt"

	"github.com/nomad-edge/nomad/helper/nesting"
)

// functions is the function table of a job file: upstream's set, the cty
// standard library functions it exposes plus its own (file, network,
// crypto, encoding, time). files resolves the file functions; now is
// the clock behind timestamp().
func functions(files fileFuncs, now func() time.Time) map[string]function.Function {
	fns := map[string]function.Function{
		// Collections.
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"index":           stdlib.IndexFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"lookup":          stdlib.LookupFunc,
		"merge":           stdlib.MergeFunc,
		"range":           stdlib.RangeFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,

		// Conversion.
		"can":     tryfunc.CanFunc,
		"convert": typeexpr.ConvertFunc,
		"try":     tryfunc.TryFunc,

		// Hashes and crypto.
		"bcrypt":     bcryptFunc,
		"md5":        hashFunc(md5.New),
		"rsadecrypt": rsaDecryptFunc,
		"sha1":       hashFunc(sha1.New),
		"sha256":     hashFunc(sha256.New),
		"sha512":     hashFunc(sha512.New),

		// Dates and times.
		"formatdate": stdlib.FormatDateFunc,
		"timeadd":    stdlib.TimeAddFunc,
		"timestamp":  timestampFunc(now),

		// Encodings.
		"base64decode": base64DecodeFunc,
		"base64encode": base64EncodeFunc,
		"csvdecode":    stdlib.CSVDecodeFunc,
		"jsondecode":   jsonDecodeFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"urlencode":    urlEncodeFunc,
		"yamldecode":   yaml.YAMLDecodeFunc,
		"yamlencode":   yaml.YAMLEncodeFunc,

		// IP networks.
		"cidrhost":    cidrHostFunc,
		"cidrnetmask": cidrNetmaskFunc,
		"cidrsubnet":  cidrSubnetFunc,
		"cidrsubnets": cidrSubnetsFunc,

		// Numbers.
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"log":      stdlib.LogFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,
		"pow":      stdlib.PowFunc,
		"signum":   stdlib.SignumFunc,

		// Strings.
		"chomp":         stdlib.ChompFunc,
		"format":        stdlib.FormatFunc,
		"formatlist":    stdlib.FormatListFunc,
		"indent":        stdlib.IndentFunc,
		"join":          stdlib.JoinFunc,
		"lower":         stdlib.LowerFunc,
		"regex":         stdlib.RegexFunc,
		"regexall":      stdlib.RegexAllFunc,
		"regex_replace": stdlib.RegexReplaceFunc,
		"replace":       stdlib.ReplaceFunc,
		"split":         stdlib.SplitFunc,
		"strrev":        stdlib.ReverseFunc,
		"substr":        stdlib.SubstrFunc,
		"title":         stdlib.TitleFunc,
		"trim":          stdlib.TrimFunc,
		"trimprefix":    stdlib.TrimPrefixFunc,
		"trimspace":     stdlib.TrimSpaceFunc,
		"trimsuffix":    stdlib.TrimSuffixFunc,
		"upper":         stdlib.UpperFunc,

		// UUIDs.
		"uuidv4": uuidV4Func,
		"uuidv5": uuidV5Func,
	}
	for name, fn := range files.table() {
		fns[name] = fn
	}
	return fns
}

func stringFunc(param string, fn func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: param, Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := fn(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(s), nil
		},
	})
}

func hashFunc(h func() hash.Hash) function.Function {
	return stringFunc("str", func(s string) (string, error) {
		sum := h()
		sum.Write([]byte(s))
		return hex.EncodeToString(sum.Sum(nil)), nil
	})
}

var base64EncodeFunc = stringFunc("str", func(s string) (string, error) {
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
})

var base64DecodeFunc = stringFunc("str", func(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", function.NewArgErrorf(0, "not valid base64: %s", err)
	}
	if !utf8.Valid(b) {
		return "", function.NewArgErrorf(0, "the decoded bytes are not valid UTF-8")
	}
	return string(b), nil
})

var urlEncodeFunc = stringFunc("str", func(s string) (string, error) {
	return url.QueryEscape(s), nil
})

var bcryptFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "str", Type: cty.String}},
	VarParam: &function.Parameter{Name: "cost", Type: cty.Number},
	Type:     function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		cost := bcrypt.DefaultCost
		if len(args) > 2 {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(2, "bcrypt takes at most a string and a cost")
		}
		if len(args) == 2 {
			c, _ := args[1].AsBigFloat().Int64()
			cost = int(c)
		}
		h, err := bcrypt.GenerateFromPassword([]byte(args[0].AsString()), cost)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "bcrypt: %s", err)
		}
		return cty.StringVal(string(h)), nil
	},
})

func timestampFunc(now func() time.Time) function.Function {
	return function.New(&function.Spec{
		Type: function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.StringVal(now().UTC().Format(time.RFC3339)), nil
		},
	})
}

var uuidV4Func = function.New(&function.Spec{
	Type: function.StaticReturnType(cty.String),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		id, err := uuid.GenerateUUID()
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(id), nil
	},
})

// uuidNamespaces are the well-known name spaces of RFC 4122, by the
// short names uuidv5 accepts.
var uuidNamespaces = map[string]string{
	"dns":  "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
	"url":  "6ba7b811-9dad-11d1-80b4-00c04fd430c8",
	"oid":  "6ba7b812-9dad-11d1-80b4-00c04fd430c8",
	"x500": "6ba7b814-9dad-11d1-80b4-00c04fd430c8",
}

// uuidV5Func is uuidv5(namespace, name): the name-based, SHA-1 UUID of
// RFC 4122, deterministic for the same inputs.
var uuidV5Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "namespace", Type: cty.String}, {Name: "name", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ns := args[0].AsString()
		if known, ok := uuidNamespaces[ns]; ok {
			ns = known
		}
		nsBytes, err := uuid.ParseUUID(ns)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "namespace must be dns, url, oid, x500 or a UUID, got %q", ns)
		}
		h := sha1.New()
		h.Write(nsBytes)
		h.Write([]byte(args[1].AsString()))
		sum := h.Sum(nil)[:16]
		sum[6] = (sum[6] & 0x0f) | 0x50
		sum[8] = (sum[8] & 0x3f) | 0x80
		id, err := uuid.FormatUUID(sum)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(id), nil
	},
})

// lengthFunc is length(x) of a collection or, as upstream documents, of a
// string (its characters).
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.Strlen(args[0])
		}
		return stdlib.Length(args[0])
	},
})

// jsonDecodeFunc is jsondecode with the nesting limit of job files: the
// decoder recurses per level, and the string may come from a remote
// caller.
var jsonDecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type: func(args []cty.Value) (cty.Type, error) {
		if args[0].IsKnown() {
			if err := nesting.CheckJSON([]byte(args[0].AsString()), nesting.MaxDepth); err != nil {
				return cty.NilType, function.NewArgError(0, err)
			}
		}
		return stdlib.JSONDecodeFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return stdlib.JSONDecode(args[0])
	},
})
