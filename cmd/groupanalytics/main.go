// Command groupanalytics serves usage reports of a study platform's groups
// and administers their store. Run it without arguments for help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"groupanalytics/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
