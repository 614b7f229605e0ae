package schema

import "errors"

var (
	// ErrInvalidSchema reports a schema that cannot be registered (bad id, no or too many properties, a
	// reserved or duplicate component id, an oversize property).
	ErrInvalidSchema = errors.New("schema: invalid schema")
	// ErrUnknownSchema reports a schema id that the table does not hold.
	ErrUnknownSchema = errors.New("schema: unknown schema")
	// ErrMaskOutOfRange reports a bitmask naming properties the schema does not have.
	ErrMaskOutOfRange = errors.New("schema: bitmask names properties the schema does not have")
	// ErrValueSize reports a property value whose size does not match the schema.
	ErrValueSize = errors.New("schema: property value has the wrong size")
	// ErrShortData reports update data that ends before every property named by the mask was read.
	ErrShortData = errors.New("schema: update data too short")
	// ErrTrailingData reports update data longer than the properties named by the mask.
	ErrTrailingData = errors.New("schema: trailing bytes after update data")
	// ErrBadValue reports a value its property's encoding never writes: a quantized index above the
	// range, a float16 NaN other than 0x7e00, a varint longer than needed or above 2⁶⁴−1.
	ErrBadValue = errors.New("schema: property value is not a valid encoding")
)
