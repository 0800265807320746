package jobspec

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// parsePrefix reads an address prefix such as "10.0.0.0/16", masking the
// host bits so that arithmetic starts from the network address.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, function.NewArgErrorf(0, "invalid CIDR prefix %q: %s", s, err)
	}
	return p.Masked(), nil
}

func addrInt(a netip.Addr) *big.Int { return new(big.Int).SetBytes(a.AsSlice()) }

// intAddr turns n back into an address of the same family as like.
func intAddr(n *big.Int, like netip.Addr) netip.Addr {
	buf := make([]byte, like.BitLen()/8)
	n.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return a
}

// wholeNumber reads v as an int64, refusing fractions.
func wholeNumber(v cty.Value, arg int) (int64, error) {
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact {
		return 0, function.NewArgErrorf(arg, "a whole number is required")
	}
	return i, nil
}

// subnet returns the netnum'th prefix of newbits more bits inside p.
func subnet(p netip.Prefix, newbits, netnum int64) (netip.Prefix, error) {
	bits := int64(p.Bits()) + newbits
	if newbits < 0 || bits > int64(p.Addr().BitLen()) {
		return netip.Prefix{}, function.NewArgErrorf(1, "%d new bits do not fit into %s", newbits, p)
	}
	if netnum < 0 || big.NewInt(netnum).Cmp(new(big.Int).Lsh(big.NewInt(1), uint(newbits))) >= 0 {
		return netip.Prefix{}, function.NewArgErrorf(2, "prefix %s has no %d-bit subnet number %d", p, newbits, netnum)
	}
	n := new(big.Int).Lsh(big.NewInt(netnum), uint(int64(p.Addr().BitLen())-bits))
	n.Or(n, addrInt(p.Addr()))
	return netip.PrefixFrom(intAddr(n, p.Addr()), int(bits)), nil
}

var cidrHostFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		host, err := wholeNumber(args[1], 1)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		size := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
		h := big.NewInt(host)
		if host < 0 {
			h.Add(h, size) // counted back from the end of the prefix
		}
		if h.Sign() < 0 || h.Cmp(size) >= 0 {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "prefix %s has no host number %d", p, host)
		}
		return cty.StringVal(intAddr(h.Or(h, addrInt(p.Addr())), p.Addr()).String()), nil
	},
})

var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		if !p.Addr().Is4() {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "netmasks are written only for IPv4 prefixes")
		}
		return cty.StringVal(net.IP(net.CIDRMask(p.Bits(), 32)).String()), nil
	},
})

var cidrSubnetFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String}, {Name: "newbits", Type: cty.Number}, {Name: "netnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		newbits, err := wholeNumber(args[1], 1)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		netnum, err := wholeNumber(args[2], 2)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		s, err := subnet(p, newbits, netnum)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(s.String()), nil
	},
})

// cidrSubnetsFunc allocates consecutive subnets of the given sizes, each
// aligned to its own size, as upstream's cidrsubnets does.
var cidrSubnetsFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "prefix", Type: cty.String}},
	VarParam: &function.Parameter{Name: "newbits", Type: cty.Number},
	Type:     function.StaticReturnType(cty.List(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.List(cty.String)), err
		}
		if len(args) == 1 {
			return cty.ListValEmpty(cty.String), nil
		}
		width := p.Addr().BitLen()
		next := addrInt(p.Addr())
		end := new(big.Int).Add(next, new(big.Int).Lsh(big.NewInt(1), uint(width-p.Bits())))
		out := make([]cty.Value, 0, len(args)-1)
		for i, a := range args[1:] {
			newbits, err := wholeNumber(a, i+1)
			if err != nil {
				return cty.UnknownVal(cty.List(cty.String)), err
			}
			bits := int64(p.Bits()) + newbits
			if newbits < 1 || bits > int64(width) {
				return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "%d new bits do not fit into %s", newbits, p)
			}
			size := new(big.Int).Lsh(big.NewInt(1), uint(int64(width)-bits))
			// Round up to this subnet's own alignment.
			rem := new(big.Int).Mod(next, size)
			if rem.Sign() != 0 {
				next.Add(next, new(big.Int).Sub(size, rem))
			}
			if new(big.Int).Add(next, size).Cmp(end) > 0 {
				return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "not enough room left in %s for a /%d subnet", p, bits)
			}
			out = append(out, cty.StringVal(netip.PrefixFrom(intAddr(next, p.Addr()), int(bits)).String()))
			next.Add(next, size)
		}
		return cty.ListVal(out), nil
	},
})

// rsaDecryptFunc is rsadecrypt(ciphertext_base64, private_key_pem), PKCS #1
// v1.5 as upstream.
var rsaDecryptFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "ciphertext", Type: cty.String}, {Name: "privatekey", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ct, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "ciphertext is not valid base64: %s", err)
		}
		block, _ := pem.Decode([]byte(args[1].AsString()))
		if block == nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "private key is not PEM encoded")
		}
		key, err := parseRSAKey(block.Bytes)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "%s", err)
		}
		// Upstream's rsadecrypt is PKCS #1 v1.5. The padding oracle that
		// deprecated it needs an attacker who can make someone else's key
		// decrypt: here the caller supplies the key too.
		//lint:ignore SA1019 rsadecrypt is defined as PKCS #1 v1.5 (upstream's function)
		out, err := rsa.DecryptPKCS1v15(nil, key, ct)
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("decrypting: %w", err)
		}
		return cty.StringVal(string(out)), nil
	},
})

func parseRSAKey(der []byte) (*rsa.PrivateKey, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("not an RSA private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA private key")
	}
	return rk, nil
}
