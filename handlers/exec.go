package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// maxCommandOutput bounds what a command may print as its result.
const maxCommandOutput = 16 << 20

// command runs an external program per task (SPEC §5.4): the payload
// is written to its stdin, its stdout is the JSON result, each stderr line is
// a log event, and stderr lines "progress: N" report progress. The program
// runs in its own process group, which is killed on timeout or cancel.
// maxDuration is the agent's max_task_duration_seconds.
func command(c Command, maxDuration time.Duration) agent.Handler {
	name := c.Name
	if name == "" {
		name = title(c.TaskType)
	}
	desc := c.Description
	if desc == "" {
		desc = "Runs " + c.Command[0]
	}
	est := c.EstimatedTime
	if est == "" {
		est = "0s-" + shortDuration(c.limit(maxDuration))
	}
	return agent.Handler{
		Type: wire.SupportedTaskType{
			Type: c.TaskType, Name: name, Description: desc, EstimatedTime: est,
			Capabilities: append([]string{"command"}, c.Capabilities...),
		},
		InputSchema:  c.InputSchema,
		OutputSchema: c.OutputSchema,
		Idempotent:   c.Idempotent,
		Disclose:     c.Disclose,
		PersonalData: c.PersonalData,
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			if c.TimeoutSeconds <= 0 {
				return runCommand(ctx, c, r)
			}
			cctx, cancel := context.WithTimeout(ctx, time.Duration(c.TimeoutSeconds)*time.Second)
			defer cancel()
			res, err := runCommand(cctx, c, r)
			if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
				// The command's own limit, not a cancel or the task's deadline.
				return nil, wire.Errorf(wire.CodeExecutionTimeout, "%s did not finish within timeout_seconds (%d)", c.Command[0], c.TimeoutSeconds)
			}
			return res, err
		},
	}
}

// Seed 000 §3.2 gives every task type a name and an estimated_time; a
// command that sets neither gets them from its task type and its limit.

// title is a task type as a name: "resize_image" is "Resize image", as the
// built-in "natural_language" is "Natural language".
func title(taskType string) string {
	words := strings.FieldsFunc(taskType, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	if len(words) == 0 {
		return taskType
	}
	s := strings.Join(words, " ")
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// limit is how long one run of c may take: timeout_seconds when it is
// shorter than the task's maximum duration, else that maximum.
func (c Command) limit(maxDuration time.Duration) time.Duration {
	if t := time.Duration(c.TimeoutSeconds) * time.Second; c.TimeoutSeconds > 0 && (maxDuration <= 0 || t < maxDuration) {
		return t
	}
	return maxDuration
}

// shortDuration writes d in its largest whole unit, as the built-in
// handlers' estimated_time does: 1h, 90m, 45s.
func shortDuration(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s > 0 && s%3600 == 0:
		return strconv.FormatInt(s/3600, 10) + "h"
	case s > 0 && s%60 == 0:
		return strconv.FormatInt(s/60, 10) + "m"
	}
	return strconv.FormatInt(s, 10) + "s"
}

func runCommand(ctx context.Context, c Command, r *agent.Run) (any, error) {
	// Pdeathsig is tied to the thread that starts the child: keep this
	// goroutine on it until the child is reaped, so that the child dies
	// with the agent even on SIGKILL. (Its own children, if it forks, are
	// killed with the process group on cancel and timeout, but not on the
	// agent's SIGKILL.)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Env = append(cmd.Env, "SYNAPSE_TASK_ID="+r.ID(), "SYNAPSE_TASK_TYPE="+r.TaskType())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = bytes.NewReader(r.Payload())
	var stdout limitedBuffer
	stdout.max = maxCommandOutput
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", c.Command[0], err)
	}
	if err := cmd.Start(); err != nil {
		return nil, wire.Errorf(wire.CodeExecutionFailed, "start %s: %v", c.Command[0], err)
	}
	pgid := cmd.Process.Pid
	stopped := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// Negative pid: the whole process group.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			close(killed)
		case <-stopped:
		}
	}()
	last := readStderr(stderr, r)
	werr := cmd.Wait()
	close(stopped)
	select {
	case <-killed:
		return nil, ctx.Err()
	default:
	}
	if werr != nil {
		msg := last
		if msg == "" {
			msg = werr.Error()
		}
		return nil, wire.Errorf(wire.CodeExecutionFailed, "%s: %s", c.Command[0], msg).With("exit", exitCode(werr))
	}
	if stdout.over {
		return nil, wire.Errorf(wire.CodeExecutionFailed, "%s printed more than %d bytes", c.Command[0], maxCommandOutput)
	}
	out := bytes.TrimSpace(stdout.buf.Bytes())
	if len(out) == 0 {
		return nil, nil
	}
	if !json.Valid(out) {
		// Plain text output is kept as a JSON string.
		return string(out), nil
	}
	return json.RawMessage(out), nil
}

// readStderr turns stderr lines into log and progress events and returns the
// last non-progress line (used as the error message on failure).
func readStderr(rd io.Reader, r *agent.Run) string {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	var last string
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "progress:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "%"))); err == nil {
				r.Progress(n, "")
				continue
			}
		}
		last = line
		r.Log(line)
	}
	// Drain the rest if a line was too long, so the child never blocks.
	_, _ = io.Copy(io.Discard, rd)
	return last
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}
