// Package schema gives TRNP's schemaId its meaning: a schema is an ordered list of properties, and each
// property is stored in the replica as one ADR-117 component with a stable id (docs/design.md §3).
//
// A schema table is registered in code on every peer with explicit ids (never by registration order). Its
// Fingerprint is announced by the host so that a peer running a different table fails fast.
//
// Property values travel in TRNP update data as the values of the properties named by a bitmask, in property
// order: a fixed-size property as exactly Size bytes, a variable-size one as a uint16 little-endian length and the
// bytes.
//
// A property may declare an Encoding (encoding.go): quantized fixed-point, IEEE binary16, or unsigned/zigzag
// LEB128 varints (self-delimiting, no length prefix). The stored bytes are the encoded numbers; CheckValue and
// ConsumeValues check every number, and the fingerprint covers the encoding. The encoders and decoders
// (AppendQuantized/ConsumeQuantized, …) write and read exactly what web/static/js/schema.js does
// (testdata/schema/encodings.json).
//
// The package is pure: no goroutines, no locks. A Table is immutable after NewTable and may be shared by any
// number of goroutines.
package schema
