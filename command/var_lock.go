package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// VarLockCommand is `nomad var lock`: run a command while holding the
// lock of a variable.
type VarLockCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarLockCommand) Synopsis() string { return "Acquire a lock over a variable" }

// Help implements cli.Command.
func (c *VarLockCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var lock [options] <path> [<variable spec file reference>] <child command>...

  Acquire the lock of the variable at path (created if missing, with the
  items of the specification when one is given), run the child command
  while holding it, renewing it before its TTL runs out, and release it
  when the command exits. If the lock is lost (a renewal refused), the
  command is killed and lock exits 1; otherwise it exits with the
  command's code. When the lock is held by someone else, lock retries up
  to -max-retry times, waiting the lock delay (at least a second) between
  attempts.

  If ACLs are enabled, this needs the 'variables:write' capability on the
  variable's namespace and path.

` + generalOptions() + `

Lock Options:

  -ttl=<duration>
    How long the lock lives without a renewal. Defaults to 15s.

  -delay=<duration>
    How long nobody may take the lock after it was lost (its TTL ran out).
    Defaults to 15s.

  -max-retry=<n>
    How many times to try to acquire a lock someone else holds. Defaults
    to 5.

  -shell=<true|false>
    Run the child command through "sh -c". Defaults to true.

  -verbose
    Report the lock's progress on standard error.
`)
}

// Run implements cli.Command.
func (c *VarLockCommand) Run(args []string) int {
	flags := c.FlagSet("var lock")
	var ttl, delay time.Duration
	var maxRetry int
	var shell, verbose bool
	flags.DurationVar(&ttl, "ttl", 15*time.Second, "")
	flags.DurationVar(&delay, "delay", 15*time.Second, "")
	flags.IntVar(&maxRetry, "max-retry", 5, "")
	flags.BoolVar(&shell, "shell", true, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	args = flags.Args()
	if len(args) < 2 {
		return c.argsError("Not enough arguments: give a path and a command", "var lock")
	}
	if ttl <= 0 || delay < 0 || maxRetry < 0 {
		return c.argsError("-ttl must be positive, -delay and -max-retry not negative", "var lock")
	}
	v := &api.Variable{Path: args[0], Namespace: c.namespace, Items: api.VariableItems{}}
	args = args[1:]
	if strings.HasPrefix(args[0], "@") {
		put := &VarPutCommand{Meta: c.Meta}
		spec, _, err := put.readSpec(args[0], "json")
		if err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
		v.Items = spec.Items
		args = args[1:]
		if len(args) == 0 {
			return c.argsError("Not enough arguments: give a command to run", "var lock")
		}
	}
	v.Lock = &api.VariableLock{TTL: ttl.String(), LockDelay: delay.String()}
	client, code, ok := c.clientFor("var lock", 0, 0)
	if !ok {
		return code
	}
	held, err := c.acquire(client, v, maxRetry, max(delay, time.Second), verbose)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error acquiring lock: %v", err))
		return exitError
	}
	if verbose {
		c.Ui.Error(fmt.Sprintf("Lock acquired on %q", v.Path))
	}
	return c.runHolding(client, held, args, shell, ttl, verbose)
}

func (c *VarLockCommand) acquire(client *api.Client, v *api.Variable, retries int, wait time.Duration, verbose bool) (*api.Variable, error) {
	for attempt := 0; ; attempt++ {
		held, _, err := client.Variables().AcquireLock(v, nil)
		var conflict api.ErrCASConflict
		if !errors.As(err, &conflict) {
			return held, err
		}
		if attempt >= retries {
			return nil, fmt.Errorf("the lock on %q is held by someone else (tried %d times)", v.Path, attempt+1)
		}
		if verbose {
			c.Ui.Error(fmt.Sprintf("Lock on %q is held; retrying in %s", v.Path, wait))
		}
		time.Sleep(wait)
	}
}

// runHolding runs the child while renewing the lock at a third of its
// TTL, kills it if a renewal is refused, and releases the lock after.
func (c *VarLockCommand) runHolding(client *api.Client, held *api.Variable, args []string, shell bool, ttl time.Duration, verbose bool) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cmd *exec.Cmd
	if shell {
		cmd = exec.CommandContext(ctx, "sh", "-c", strings.Join(args, " "))
	} else {
		cmd = exec.CommandContext(ctx, args[0], args[1:]...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		c.release(client, held)
		c.Ui.Error(fmt.Sprintf("Error starting the command: %v", err))
		return exitError
	}
	lost := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		renew := &api.Variable{Path: held.Path, Namespace: held.Namespace, Lock: &api.VariableLock{ID: held.LockID()}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, _, err := client.Variables().RenewLock(renew, nil); err != nil {
					lost <- err
					cancel()
					return
				}
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	select {
	case lerr := <-lost:
		c.Ui.Error(fmt.Sprintf("Lock on %q lost, command killed: %v", held.Path, lerr))
		return exitError
	default:
	}
	c.release(client, held)
	if verbose {
		c.Ui.Error(fmt.Sprintf("Lock on %q released", held.Path))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error running the command: %v", err))
		return exitError
	}
	return exitOK
}

func (c *VarLockCommand) release(client *api.Client, held *api.Variable) {
	rel := &api.Variable{Path: held.Path, Namespace: held.Namespace, Lock: &api.VariableLock{ID: held.LockID()}}
	if _, _, err := client.Variables().ReleaseLock(rel, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error releasing the lock on %q: %v", held.Path, err))
	}
}
