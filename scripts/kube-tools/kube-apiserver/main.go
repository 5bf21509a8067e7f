// Command kube-apiserver starts the API server of the Kubernetes release this module pins
// (k8s.io/kubernetes/cmd/kube-apiserver/app), for the real-cluster test tier.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
