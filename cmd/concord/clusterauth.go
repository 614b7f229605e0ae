package main

import (
	"flag"
	"os"

	"github.com/concordrtc/concord/internal/durable"
	"github.com/concordrtc/concord/server"
)

// clusterAuthFlags adds the flags that authenticate a cluster's routes and the connection to an
// external NATS (docs/security.md §7, docs/protocol.md §7 "Cluster: authentication"), and
// --room-ttl (docs/protocol.md §6).
func clusterAuthFlags(fs *flag.FlagSet, o *server.Options) {
	fs.StringVar(&o.ClusterSecret, "cluster-secret", os.Getenv("CONCORD_CLUSTER_SECRET"), "route password, the same on every node (env CONCORD_CLUSTER_SECRET; default: derived from CONCORD_SECRET)")
	fs.BoolVar(&o.ClusterInsecure, "cluster-insecure", false, "run cluster routes without a secret or TLS: anyone who reaches --cluster joins the cluster (a private network only)")
	fs.StringVar(&o.ClusterTLSCert, "cluster-tls-cert", "", "this node's route TLS certificate (PEM): routes run over TLS, each node verifying the others against --cluster-tls-ca")
	fs.StringVar(&o.ClusterTLSKey, "cluster-tls-key", "", "its private key (PEM)")
	fs.StringVar(&o.ClusterTLSCA, "cluster-tls-ca", "", "CA (PEM) the other nodes' route certificates must chain to")
	fs.StringVar(&o.NATSCreds, "nats-creds", "", "NATS credentials file (user JWT and nkey seed) for --nats")
	fs.StringVar(&o.NATSToken, "nats-token", os.Getenv("CONCORD_NATS_TOKEN"), "NATS authentication token for --nats (env CONCORD_NATS_TOKEN)")
	fs.StringVar(&o.NATSCA, "nats-ca", "", "CA (PEM) that verifies the --nats servers' certificates (TLS)")
	fs.StringVar(&o.NATSCert, "nats-cert", "", "client certificate (PEM) for --nats servers that verify clients")
	fs.StringVar(&o.NATSKey, "nats-key", "", "its private key (PEM)")
	fs.DurationVar(&o.RoomTTL, "room-ttl", durable.DefaultRoomTTL, "a room's counters (last peer index, term) leave the durable store this long after their last change")
}
