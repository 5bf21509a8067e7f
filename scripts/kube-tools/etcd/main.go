// Command etcd starts etcd through its own entry point (go.etcd.io/etcd/server/v3/etcdmain), for
// the real-cluster test tier.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
