package main

import (
	"flag"
	"os"

	"github.com/concordrtc/concord/internal/durable"
)

// clusterAuthFlags adds the flags that authenticate a cluster's routes and the connection to an
// external NATS (docs/security.md §7, docs/protocol.md §7 "Cluster: authentication"), and
// --room-ttl (docs/protocol.md §6).
func clusterAuthFlags(fs *flag.FlagSet, o *serveOptions) {
	fs.StringVar(&o.clusterSecret, "cluster-secret", os.Getenv("CONCORD_CLUSTER_SECRET"), "route password, the same on every node (env CONCORD_CLUSTER_SECRET; default: derived from CONCORD_SECRET)")
	fs.BoolVar(&o.clusterInsecure, "cluster-insecure", false, "run cluster routes without a secret or TLS: anyone who reaches --cluster joins the cluster (a private network only)")
	fs.StringVar(&o.clusterTLS[0], "cluster-tls-cert", "", "this node's route TLS certificate (PEM): routes run over TLS, each node verifying the others against --cluster-tls-ca")
	fs.StringVar(&o.clusterTLS[1], "cluster-tls-key", "", "its private key (PEM)")
	fs.StringVar(&o.clusterTLS[2], "cluster-tls-ca", "", "CA (PEM) the other nodes' route certificates must chain to")
	fs.StringVar(&o.natsAuth.Creds, "nats-creds", "", "NATS credentials file (user JWT and nkey seed) for --nats")
	fs.StringVar(&o.natsAuth.Token, "nats-token", os.Getenv("CONCORD_NATS_TOKEN"), "NATS authentication token for --nats (env CONCORD_NATS_TOKEN)")
	fs.StringVar(&o.natsAuth.CA, "nats-ca", "", "CA (PEM) that verifies the --nats servers' certificates (TLS)")
	fs.StringVar(&o.natsAuth.Cert, "nats-cert", "", "client certificate (PEM) for --nats servers that verify clients")
	fs.StringVar(&o.natsAuth.Key, "nats-key", "", "its private key (PEM)")
	fs.DurationVar(&o.roomTTL, "room-ttl", durable.DefaultRoomTTL, "a room's counters (last peer index, term) leave the durable store this long after their last change")
}

// clusterConfig is the embedded server's cluster block of o.
func (o serveOptions) clusterConfig() durable.ClusterConfig {
	return durable.ClusterConfig{Name: o.clusterName, Listen: o.clusterAddr, Routes: o.routes, Secret: o.clusterSecret,
		TLSCert: o.clusterTLS[0], TLSKey: o.clusterTLS[1], TLSCA: o.clusterTLS[2], Insecure: o.clusterInsecure}
}
