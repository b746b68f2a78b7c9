// Command benchtool is the Go half of the latency benchmark in bench/ghz
// (run.sh drives it; ghz does the gRPC load):
//
//	benchtool payload  realistic CompleteRequest payloads: a cursor in a
//	                   repository of N real Go source files (GOROOT/src),
//	                   every file with content ("full") or, as an IDE sends
//	                   after the first request, all but the cursor file as
//	                   sha256 digests ("digest")
//	benchtool pair     infill (Complete, StreamComplete) and the same prompt
//	                   sent straight to Ollama's /api/generate, interleaved
//	                   round by round, to measure infill's own overhead
//	benchtool report   summarise ghz and pair results as JSON and markdown
//	benchtool wait     wait until a gRPC server reports SERVING (health)
//	benchtool surfaces the same completion through gRPC Complete, POST
//	                   /infill and POST /v1/completions against fakeollama:
//	                   what the HTTP surfaces cost over gRPC (issue 19)
//
// The prompt for the direct requests is built with the same contextpack
// Builder and configuration as infill-server, and the request carries the
// same options as inference.Ollama; against fakeollama the pair command
// checks that both requests are byte-for-byte the same.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "payload":
		err = payloadCmd(os.Args[2:])
	case "pair":
		err = pairCmd(os.Args[2:])
	case "report":
		err = reportCmd(os.Args[2:])
	case "wait":
		err = waitCmd(os.Args[2:])
	case "floor":
		err = floorCmd(os.Args[2:])
	case "surfaces":
		err = surfacesCmd(os.Args[2:])
	case "floor-server":
		err = floorServerCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool payload|pair|floor|surfaces|report|wait [flags] (-h for each)")
	os.Exit(2)
}
