// Command monty runs Python code in Monty's sandbox: `monty -c CODE`,
// `monty FILE.py`. Run `monty -h` for flags.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/monty-go/monty/cmd/monty/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
