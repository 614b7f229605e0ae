package world

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/signaling"
)

// PlayerBucket is the JetStream KV bucket of the players' saved data, key "W.RoomKey(owner)".
const PlayerBucket = "concord_world_players"

// maxPlayerRecord bounds a stored player record (a gen, up to 255 values of up to 64 KiB).
const maxPlayerRecord = 256 << 10

// playerKV keeps players' data in the cluster's JetStream (nil Server.kv: memory only).
type playerKV struct {
	kv    jetstream.KeyValue
	world string
}

func openPlayerKV(ctx context.Context, st *durable.Store, world string) (*playerKV, error) {
	js, err := jetstream.New(st.Conn())
	if err != nil {
		return nil, err
	}
	kv, err := createKV(ctx, js, jetstream.KeyValueConfig{Bucket: PlayerBucket,
		Description: "Concord world players' saved avatars (docs/protocol.md §11)", History: 1,
		Storage: jetstream.FileStorage, Replicas: st.Replicas(), MaxValueSize: maxPlayerRecord})
	if err != nil {
		return nil, err
	}
	return &playerKV{kv: kv, world: world}, nil
}

// kvWait bounds createKV; kvAttempt bounds each of its attempts.
const (
	kvWait    = 60 * time.Second
	kvAttempt = 3 * time.Second
)

// createKV creates (or updates) a bucket, in short attempts until kvWait has passed: nodes of a
// cluster starting together create the same replicated buckets at once, and a request made while
// the others do, or before the meta leader has settled, can hang its whole timeout (as the
// store's own buckets, docs/protocol.md §7 "Cluster: startup").
func createKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	deadline := time.Now().Add(kvWait)
	for {
		actx, cancel := context.WithTimeout(ctx, kvAttempt)
		kv, err := js.CreateOrUpdateKeyValue(actx, cfg)
		cancel()
		if err == nil {
			return kv, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("world: key-value bucket %s: %w", cfg.Bucket, err)
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

func (p *playerKV) key(owner string) string {
	return p.world + "." + durable.RoomKey(signaling.RoomID(owner))
}

func (p *playerKV) load(ctx context.Context, owner string) (values [][]byte, gen uint32, err error) {
	e, err := p.kv.Get(ctx, p.key(owner))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return consumePlayer(e.Value())
}

func (p *playerKV) save(ctx context.Context, owner string, values [][]byte, gen uint32) error {
	_, err := p.kv.Put(ctx, p.key(owner), appendPlayer(nil, values, gen))
	return err
}

// appendPlayer encodes a player record: gen u32 | count u8 | (present u8 | len u16 | bytes)*.
func appendPlayer(dst []byte, values [][]byte, gen uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, gen)
	dst = append(dst, byte(min(len(values), 255)))
	for _, v := range values[:min(len(values), 255)] {
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

func consumePlayer(b []byte) ([][]byte, uint32, error) {
	if len(b) < 5 || len(b) > maxPlayerRecord {
		return nil, 0, errShort
	}
	gen, n := binary.LittleEndian.Uint32(b), int(b[4])
	b = b[5:]
	values := make([][]byte, n)
	for i := range n {
		if len(b) < 1 {
			return nil, 0, errShort
		}
		if b[0] == 0 {
			b = b[1:]
			continue
		}
		if len(b) < 3 {
			return nil, 0, errShort
		}
		l := int(binary.LittleEndian.Uint16(b[1:]))
		if len(b) < 3+l {
			return nil, 0, errShort
		}
		values[i] = append([]byte{}, b[3:3+l]...)
		b = b[3+l:]
	}
	if len(b) != 0 {
		return nil, 0, errShort
	}
	return values, gen, nil
}
