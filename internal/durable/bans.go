package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/concordrtc/concord/signaling"
)

// BanBucket is the KV bucket of the rooms' bans (moderation: docs/protocol.md §4 "Signaling:
// moderation"), one key per room and target, shared by every node of a cluster.
const BanBucket = "concord_bans"

// Bans keeps the rooms' bans in BanBucket: a signaling.BanStore whose changes every node sees
// (Watch), so a ban made through one node holds on all. Its methods are safe for concurrent use.
type Bans struct {
	s  *Store
	kv jetstream.KeyValue
}

// Bans makes (or opens) the ban bucket. The nodes of a cluster started together make it at
// once, and JetStream may then answer none of them in time: each opens the bucket if it exists
// and tries again until Config.StartTimeout, as Open does for its own buckets.
func (s *Store) Bans() (*Bans, error) {
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for {
		kv, err := s.banBucket()
		if err == nil {
			return &Bans{s: s, kv: kv}, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("durable: key-value bucket %s: %w", BanBucket, err)
		}
		s.log.Debug().Err(err).Msg("ban bucket not ready yet")
		time.Sleep(250 * time.Millisecond)
	}
}

func (s *Store) banBucket() (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if kv, err := s.js.KeyValue(ctx, BanBucket); err == nil {
		return kv, nil
	}
	return s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: BanBucket, Description: "Concord bans (room, target, expiry, reason)", History: 1, Storage: jetstream.FileStorage,
		Replicas: s.cfg.replicas(),
	})
}

// banKey is the key of target's ban in room: both escaped as RoomKey does ('.' and '/' too),
// joined by '.'.
func banKey(room signaling.RoomID, target signaling.Identity) string {
	return RoomKey(room) + "." + RoomKey(signaling.RoomID(target))
}

// parseBanKey undoes banKey.
func parseBanKey(key string) (signaling.RoomID, signaling.Identity, error) {
	r, t, ok := strings.Cut(key, ".")
	if !ok {
		return "", "", fmt.Errorf("durable: %s key %q: no '.'", BanBucket, key)
	}
	room, err1 := unescapeKey(r)
	target, err2 := unescapeKey(t)
	if err := errors.Join(err1, err2); err != nil {
		return "", "", fmt.Errorf("durable: %s key %q: %w", BanBucket, key, err)
	}
	return signaling.RoomID(room), signaling.Identity(target), nil
}

// unescapeKey undoes RoomKey's =XX escapes.
func unescapeKey(k string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] != '=' {
			b.WriteByte(k[i])
			continue
		}
		if i+2 >= len(k) {
			return "", fmt.Errorf("escape cut short")
		}
		v, err := strconv.ParseUint(k[i+1:i+3], 16, 8)
		if err != nil {
			return "", err
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}

// LoadBans implements signaling.BanStore.
func (b *Bans) LoadBans() ([]signaling.Ban, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.Timeout)
	defer cancel()
	keys, err := b.kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = keys.Stop() }()
	var out []signaling.Ban
	for key := range keys.Keys() {
		e, err := b.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		var ban signaling.Ban
		if err := json.Unmarshal(e.Value(), &ban); err != nil {
			b.s.log.Warn().Err(err).Str("key", key).Msg("malformed ban skipped")
			continue
		}
		out = append(out, ban)
	}
	return out, ctx.Err()
}

// PutBan implements signaling.BanStore.
func (b *Bans) PutBan(ban signaling.Ban) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.Timeout)
	defer cancel()
	v, err := json.Marshal(ban)
	if err != nil {
		return err
	}
	_, err = b.kv.Put(ctx, banKey(ban.Room, ban.Target), v)
	return err
}

// DeleteBan implements signaling.BanStore.
func (b *Bans) DeleteBan(room signaling.RoomID, target signaling.Identity) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.Timeout)
	defer cancel()
	return b.kv.Delete(ctx, banKey(room, target))
}

// Watch calls changed with every ban stored now and every change stored later, by any node (this
// one's included: applying a ban twice changes nothing), until ctx ends: lifted false for a ban
// put, true for one deleted (ban then holds only its Room and Target). The stored bans come
// first, so a ban made between a node's LoadBans and its Watch is not missed. serve passes them
// to signaling.Server.BanChanged.
func (b *Bans) Watch(ctx context.Context, changed func(ban signaling.Ban, lifted bool)) error {
	w, err := b.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil {
				continue // the end of the stored bans
			}
			switch e.Operation() {
			case jetstream.KeyValuePut:
				var ban signaling.Ban
				if err := json.Unmarshal(e.Value(), &ban); err != nil {
					b.s.log.Warn().Err(err).Str("key", e.Key()).Msg("malformed ban skipped")
					continue
				}
				changed(ban, false)
			case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
				room, target, err := parseBanKey(e.Key())
				if err != nil {
					b.s.log.Warn().Err(err).Msg("malformed ban key skipped")
					continue
				}
				changed(signaling.Ban{Room: room, Target: target}, true)
			}
		}
	}
}

// kickSubject carries a cluster's kicks: a kick that finds no member on the node it reaches is
// asked of every node, and the one that serves the room answers.
const kickSubject = "concord.moderation.kick"

// kickTimeout bounds how long a kick waits for the node that serves the room.
const kickTimeout = 2 * time.Second

type kickRequest struct {
	Room   signaling.RoomID   `json:"room"`
	Target signaling.Identity `json:"target"`
	Reason string             `json:"reason,omitempty"`
}

type kickReply struct {
	Kicked []signaling.Identity `json:"kicked"`
}

// Kick asks the other nodes to kick target from room (signaling.Config.KickElsewhere) and
// returns whom the node that serves the room removed: none when no node answers in time.
func (b *Bans) Kick(ctx context.Context, room signaling.RoomID, target signaling.Identity, reason string) ([]signaling.Identity, error) {
	req, err := json.Marshal(kickRequest{Room: room, Target: target, Reason: reason})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, kickTimeout)
	defer cancel()
	m, err := b.s.nc.RequestWithContext(ctx, kickSubject, req)
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var r kickReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, fmt.Errorf("durable: kick reply: %w", err)
	}
	return r.Kicked, nil
}

// ServeKicks answers the other nodes' kicks with kick (a signaling.Server's Kick) until ctx ends:
// only a node that removed someone answers.
func (b *Bans) ServeKicks(ctx context.Context, kick func(ctx context.Context, room signaling.RoomID, target signaling.Identity, reason string) ([]signaling.Identity, error)) error {
	sub, err := b.s.nc.Subscribe(kickSubject, func(m *nats.Msg) {
		var req kickRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			return
		}
		kicked, err := kick(ctx, req.Room, req.Target, req.Reason)
		if err != nil || len(kicked) == 0 {
			return
		}
		if v, err := json.Marshal(kickReply{Kicked: kicked}); err == nil {
			_ = m.Respond(v)
		}
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}
