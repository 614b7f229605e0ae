package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"

	"github.com/concordrtc/concord/crdt"
)

// ID identifies a schema; it is TRNP's Spawn.schemaId.
type ID uint32

const (
	// MaxProperties is the most properties a schema may have (a uint32 bitmask).
	MaxProperties = 32
	// MaxValueSize is the largest property value, fixed or variable (a variable value has a uint16 length,
	// and an update must fit in a 1200-byte datagram anyway).
	MaxValueSize = 1 << 12
	// FirstAppComponent is the lowest component id a schema property may use; ids below it belong to Concord.
	FirstAppComponent crdt.ComponentID = 1024
)

// Components owned by Concord itself (below FirstAppComponent).
const (
	// ComponentMeta holds an entity's schema id (uint32 LE) followed by its creation data.
	ComponentMeta crdt.ComponentID = 1
	// ComponentAuthority holds an entity's authority record (package authority).
	ComponentAuthority crdt.ComponentID = 2
)

// Property is one field of a schema, stored as one CRDT component.
type Property struct {
	Name      string
	Component crdt.ComponentID
	// Size is the fixed size of the value in bytes; zero means variable size (uint16 length prefix on the
	// wire). For a quantized or float16 Encoding it may be left 0: NewTable sets it to Count × Width. A
	// varint property has Size 0 and no length prefix (its bytes delimit themselves).
	Size int
	// Encoding is how the value's bytes encode numbers; the zero Encoding is raw bytes.
	Encoding Encoding

	// width is Encoding.Width() and steps Encoding.Steps() of a quantized encoding, set by
	// NewTable (width 0: not set), for CheckValue and deltas on the hot path.
	width int
	steps uint64
}

// prefixed reports whether p's values carry a uint16 length prefix on the wire.
func (p *Property) prefixed() bool { return p.Size == 0 && p.Encoding.Kind == KindRaw }

// Schema is an ordered list of properties.
type Schema struct {
	ID         ID
	Name       string
	Properties []Property

	// deltaMask is DeltaMask's result, set by NewTable (deltaSet), for the hot path.
	deltaMask uint32
	deltaSet  bool
}

// Table is the set of schemas a peer runs.
type Table struct {
	schemas     map[ID]*Schema
	ids         []ID
	fingerprint uint64
}

// NewTable validates and registers schemas. The returned table is immutable.
func NewTable(schemas ...Schema) (*Table, error) {
	t := &Table{schemas: make(map[ID]*Schema, len(schemas))}
	for i := range schemas {
		s := schemas[i]
		if _, dup := t.schemas[s.ID]; dup {
			return nil, fmt.Errorf("%w: duplicate id %d", ErrInvalidSchema, s.ID)
		}
		if n := len(s.Properties); n == 0 || n > MaxProperties {
			return nil, fmt.Errorf("%w: %q has %d properties (want 1..%d)", ErrInvalidSchema, s.Name, n, MaxProperties)
		}
		seen := make(map[crdt.ComponentID]bool, len(s.Properties))
		s.Properties = slices.Clone(s.Properties)
		for k := range s.Properties {
			p := &s.Properties[k]
			if p.Component < FirstAppComponent {
				return nil, fmt.Errorf("%w: %q.%s uses component %d, below %d (reserved for Concord)",
					ErrInvalidSchema, s.Name, p.Name, p.Component, FirstAppComponent)
			}
			if seen[p.Component] {
				return nil, fmt.Errorf("%w: %q uses component %d twice", ErrInvalidSchema, s.Name, p.Component)
			}
			seen[p.Component] = true
			if p.Size < 0 || p.Size > MaxValueSize {
				return nil, fmt.Errorf("%w: %q.%s has size %d", ErrInvalidSchema, s.Name, p.Name, p.Size)
			}
			enc, size, err := p.Encoding.validate()
			if err != nil {
				return nil, fmt.Errorf("%w: %q.%s: %v", ErrInvalidSchema, s.Name, p.Name, err)
			}
			if enc.Kind != KindRaw {
				if p.Size != 0 && p.Size != size || size > MaxValueSize {
					return nil, fmt.Errorf("%w: %q.%s has size %d, its %s encoding %d", ErrInvalidSchema, s.Name, p.Name, p.Size, enc.Kind, size)
				}
				p.Encoding, p.Size = enc, size
				p.width = enc.Width()
				if enc.Kind == KindQuantized {
					p.steps = enc.Steps()
				}
			}
		}
		s.deltaMask, s.deltaSet = s.DeltaMask(), true
		t.schemas[s.ID] = &s
		t.ids = append(t.ids, s.ID)
	}
	slices.Sort(t.ids)
	t.fingerprint = t.computeFingerprint()
	return t, nil
}

// MustTable is NewTable for schema tables written in code; it panics on an invalid table.
func MustTable(schemas ...Schema) *Table {
	t, err := NewTable(schemas...)
	if err != nil {
		panic(err)
	}
	return t
}

// Lookup returns the schema with the given id.
func (t *Table) Lookup(id ID) (*Schema, bool) {
	s, ok := t.schemas[id]
	return s, ok
}

// IDs returns the registered schema ids in ascending order. The slice must not be modified.
func (t *Table) IDs() []ID { return t.ids }

// Fingerprint is FNV-1a 64 over the canonical description of every schema (ids ascending; for each: id,
// property count, then per property component id and size, all uint32 LE). A property with an encoding
// has bit 31 set in its size word and its encoding follows: kind and count (uint32 LE), and for a
// quantized one the IEEE 754 bits of min, max and step (uint64 LE). A raw table keeps the fingerprint
// it had before encodings existed; peers whose encodings differ never match. Names do not count:
// renaming is harmless.
func (t *Table) Fingerprint() uint64 { return t.fingerprint }

func (t *Table) computeFingerprint() uint64 {
	h := fnv.New64a()
	var b []byte
	for _, id := range t.ids {
		s := t.schemas[id]
		b = binary.LittleEndian.AppendUint32(b[:0], uint32(s.ID))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Properties)))
		for _, p := range s.Properties {
			b = binary.LittleEndian.AppendUint32(b, uint32(p.Component))
			if p.Encoding.Kind == KindRaw {
				b = binary.LittleEndian.AppendUint32(b, uint32(p.Size))
				continue
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(p.Size)|1<<31)
			b = p.Encoding.appendFingerprint(b)
		}
		h.Write(b)
	}
	return h.Sum64()
}

// FullMask names every property of s.
func (s *Schema) FullMask() uint32 {
	if len(s.Properties) == 32 {
		return ^uint32(0)
	}
	return 1<<len(s.Properties) - 1
}

// Index returns the index of the property stored in component c.
func (s *Schema) Index(c crdt.ComponentID) (int, bool) {
	for i := range s.Properties {
		if s.Properties[i].Component == c {
			return i, true
		}
	}
	return 0, false
}

// CheckValue reports whether v is a valid value for property i: its size, and for an encoded
// property every number in it (ErrBadValue; a varint value must hold exactly Count varints).
func (s *Schema) CheckValue(i int, v []byte) error {
	p := &s.Properties[i]
	if p.Size > 0 && len(v) != p.Size || p.Size == 0 && len(v) > MaxValueSize {
		return fmt.Errorf("%w: %s.%s wants %d bytes, got %d", ErrValueSize, s.Name, p.Name, p.Size, len(v))
	}
	if p.Encoding.Kind == KindRaw {
		return nil
	}
	if p.Encoding.Kind == KindQuantized && p.width > 0 && len(v) == p.Size {
		// The hot path: the size is right, so only the indices can be out of range.
		for k := 0; k < len(v); k += p.width {
			if uintLE(v[k:], p.width) > p.steps {
				return fmt.Errorf("%s.%s: %w: quantized index above %d", s.Name, p.Name, ErrBadValue, p.steps)
			}
		}
		return nil
	}
	n, err := p.Encoding.scan(v)
	switch {
	case errors.Is(err, ErrShortData):
		return fmt.Errorf("%w: %s.%s holds fewer than %d numbers", ErrValueSize, s.Name, p.Name, p.Encoding.Count)
	case err != nil:
		return fmt.Errorf("%s.%s: %w", s.Name, p.Name, err)
	case n != len(v):
		return fmt.Errorf("%w: %s.%s has %d bytes after its %d numbers", ErrValueSize, s.Name, p.Name, len(v)-n, p.Encoding.Count)
	}
	return nil
}

// AppendValue appends the wire form of value v of property i. The caller has checked v with CheckValue.
func (s *Schema) AppendValue(dst []byte, i int, v []byte) []byte {
	if s.Properties[i].prefixed() {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(v)))
	}
	return append(dst, v...)
}

// ValueSize is the size of property i's value v on the wire.
func (s *Schema) ValueSize(i int, v []byte) int {
	if s.Properties[i].prefixed() {
		return 2 + len(v)
	}
	return len(v)
}

// ConsumeValues walks update data holding the properties named by mask, in property order, calling fn with
// each property index and its value. Values alias data. It returns an error, having called fn for nothing,
// when the data does not match the mask exactly.
func (s *Schema) ConsumeValues(data []byte, mask uint32, fn func(i int, v []byte)) error {
	if mask&^s.FullMask() != 0 {
		return fmt.Errorf("%w: mask %#x, %s has %d properties", ErrMaskOutOfRange, mask, s.Name, len(s.Properties))
	}
	// Validate first so that fn never sees part of a malformed update.
	if err := s.walk(data, mask, nil); err != nil {
		return err
	}
	return s.walk(data, mask, fn)
}

// WalkValues is ConsumeValues in one pass, for data a caller reads twice (a snapshot's spawns:
// checked whole first, merged after): fn may see values before a malformed one ends the walk
// with an error.
func (s *Schema) WalkValues(data []byte, mask uint32, fn func(i int, v []byte)) error {
	if mask&^s.FullMask() != 0 {
		return fmt.Errorf("%w: mask %#x, %s has %d properties", ErrMaskOutOfRange, mask, s.Name, len(s.Properties))
	}
	return s.walk(data, mask, fn)
}

func (s *Schema) walk(data []byte, mask uint32, fn func(i int, v []byte)) error {
	off := 0
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		v, n, err := s.consumeValue(i, data, off)
		if err != nil {
			return err
		}
		if fn != nil {
			fn(i, v)
		}
		off += n
	}
	if off != len(data) {
		return fmt.Errorf("%w: %d bytes", ErrTrailingData, len(data)-off)
	}
	return nil
}

// ConsumeValue reads the wire form of property i's value at the start of data (as AppendValue
// writes it, every number checked) and returns the value, aliasing data, and the bytes read.
func (s *Schema) ConsumeValue(i int, data []byte) ([]byte, int, error) {
	return s.consumeValue(i, data, 0)
}

// consumeValue is ConsumeValue at data[off:]; errors name the offset in data.
func (s *Schema) consumeValue(i int, data []byte, off int) ([]byte, int, error) {
	p := &s.Properties[i]
	start := off
	n := p.Size
	switch {
	case p.Encoding.Kind == KindQuantized && p.width > 0:
		// As scan does, with the width and steps NewTable worked out: scan's float division
		// for every number was most of the cost of reading a snapshot's values.
		if len(data)-off < n {
			return nil, 0, fmt.Errorf("%w: %s.%s at offset %d", ErrShortData, s.Name, p.Name, off)
		}
		for k := 0; k < n; k += p.width {
			if uintLE(data[off+k:], p.width) > p.steps {
				return nil, 0, fmt.Errorf("%s.%s at offset %d: %w", s.Name, p.Name, off, fmt.Errorf("%w: quantized index above %d", ErrBadValue, p.steps))
			}
		}
	case p.Encoding.Kind != KindRaw:
		// Check every number: the replica keeps only values its encoding writes.
		sz, err := p.Encoding.scan(data[off:])
		if errors.Is(err, ErrShortData) {
			return nil, 0, fmt.Errorf("%w: %s.%s at offset %d", ErrShortData, s.Name, p.Name, off)
		} else if err != nil {
			return nil, 0, fmt.Errorf("%s.%s at offset %d: %w", s.Name, p.Name, off, err)
		}
		n = sz
	case n == 0:
		if len(data)-off < 2 {
			return nil, 0, fmt.Errorf("%w: %s.%s length at offset %d", ErrShortData, s.Name, p.Name, off)
		}
		n = int(binary.LittleEndian.Uint16(data[off:]))
		off += 2
		if n > MaxValueSize {
			return nil, 0, fmt.Errorf("%w: %s.%s has %d bytes", ErrValueSize, s.Name, p.Name, n)
		}
	}
	if len(data)-off < n {
		return nil, 0, fmt.Errorf("%w: %s.%s needs %d bytes at offset %d, %d left", ErrShortData, s.Name, p.Name, n, off, len(data)-off)
	}
	return data[off : off+n : off+n], off + n - start, nil
}

// AppendMeta appends the value of the meta component: schema id and creation data.
func AppendMeta(dst []byte, id ID, creation []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(id))
	return append(dst, creation...)
}

// ParseMeta splits a meta component value. creation aliases v.
func ParseMeta(v []byte) (id ID, creation []byte, ok bool) {
	if len(v) < 4 {
		return 0, nil, false
	}
	return ID(binary.LittleEndian.Uint32(v)), v[4:], true
}
