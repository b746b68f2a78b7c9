package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Warm sandboxes. A cold run pays for a bubblewrap sandbox and a Python
// interpreter of its own (about 20 ms of a ~30 ms floor on an idle machine).
// A warm sandbox is one bubblewrap sandbox, made once with the same
// namespaces, mounts and uid as a cold one, whose runner (runner.py serve)
// stays up and keeps the process for the next sample prepared: forked into
// fresh PID, mount and IPC namespaces with fresh tmpfs on /work, /tmp and
// /dev/shm and a /proc of its own, every capability dropped (the runner
// holds CAP_SYS_ADMIN and CAP_SETPCAP inside the sandbox's user namespace
// only to do this), waiting on a socket (its door) that the runner hands to
// this side. A run writes its request to the door and reads the sample's
// wait status from it; the same code as a cold run then runs the sample.
// When the sample's process ends, its namespace's init exits and the kernel
// kills whatever the sample left, so nothing of one sample can touch the
// next: not a process (other PID namespace), not a file (its tmpfs are
// gone), not an IPC object. The sample's stdout, stderr and status pipes are
// fresh per sample, passed over the door, so capture, limits and the pass
// signal are exactly those of a cold run. Floods, timeouts and cancellation
// kill the sample's namespace through the runner; if that does not end the
// sample within warmKillGrace the whole warm sandbox is killed instead.

// warmKillGrace is how long a warm sandbox may take to report a sample it
// was told to kill before the sandbox itself is killed.
const warmKillGrace = 5 * time.Second

// warmExtraProcesses are the processes of a warm sandbox's user namespace
// besides a cold run's (the serving runner and its parent, the sample's
// init, and the next sample's init and process, prepared ahead), added to
// RLIMIT_NPROC so that a sample has the same room.
const warmExtraProcesses = 5

// warmFilesBytes is the room on a warm sample's /work for its files, on
// top of Config.TmpfsBytes for what it writes.
const warmFilesBytes = 64 << 20

// warmPool keeps idle warm sandboxes.
type warmPool struct {
	mu     sync.Mutex
	idle   []*worker
	max    int
	closed bool
}

// get returns an idle live worker, or nil.
func (p *warmPool) get() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if w.alive() {
			return w
		}
		w.kill()
	}
	return nil
}

// put keeps w for the next run, or stops it when the pool is full or closed.
func (p *warmPool) put(w *worker) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max && w.alive() {
		p.idle = append(p.idle, w)
		w = nil
	}
	p.mu.Unlock()
	if w != nil {
		w.kill()
	}
}

func (p *warmPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, w := range idle {
		w.kill()
	}
}

// worker is one warm sandbox: bwrap running runner.py serve.
type worker struct {
	cmd    *exec.Cmd
	ctrl   *net.UnixConn
	ctrlMu sync.Mutex // serialises writes to ctrl
	stderr *tailWriter
	// ready is closed when the runner said it is up; doors carries the
	// prepared samples' doors, and is closed when the control socket ends.
	ready    chan struct{}
	doors    chan warmDoor
	exited   chan struct{}
	killOnce sync.Once
}

// warmDoor is a prepared sample's socket.
type warmDoor struct {
	seq  int
	conn *net.UnixConn
}

func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill stops the warm sandbox and waits for it.
func (w *worker) kill() {
	w.killOnce.Do(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		_ = w.ctrl.Close()
		<-w.exited
		for d := range w.doors {
			d.conn.Close()
		}
	})
}

// send writes one message to the runner's control socket.
func (w *worker) send(kind byte, payload []byte) error {
	w.ctrlMu.Lock()
	defer w.ctrlMu.Unlock()
	msg := make([]byte, 5+len(payload))
	msg[0] = kind
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(payload)))
	copy(msg[5:], payload)
	_ = w.ctrl.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := w.ctrl.Write(msg)
	return err
}

// readControl reads the runner's control messages: the ready line, and
// each prepared sample's door (the socket attached to its line).
func (w *worker) readControl() {
	defer close(w.doors)
	var pending []int // received descriptors, in order
	defer func() {
		for _, fd := range pending {
			syscall.Close(fd)
		}
	}()
	buf := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	var line []byte
	readyOnce := sync.Once{}
	for {
		n, oobn, _, _, err := w.ctrl.ReadMsgUnix(buf, oob)
		n, oobn = max(n, 0), max(oobn, 0)
		if oobn > 0 {
			if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, m := range msgs {
					if fds, perr := syscall.ParseUnixRights(&m); perr == nil {
						pending = append(pending, fds...)
					}
				}
			}
		}
		line = append(line, buf[:n]...)
		for {
			i := bytes.IndexByte(line, '\n')
			if i < 0 {
				break
			}
			var m struct {
				Ready bool `json:"ready"`
				Door  int  `json:"door"`
			}
			_ = json.Unmarshal(line[:i], &m)
			line = line[i+1:]
			switch {
			case m.Ready:
				readyOnce.Do(func() { close(w.ready) })
			case m.Door > 0 && len(pending) > 0:
				fd := pending[0]
				pending = pending[1:]
				f := os.NewFile(uintptr(fd), "warm-door")
				c, cerr := net.FileConn(f)
				f.Close()
				if cerr != nil {
					return
				}
				w.doors <- warmDoor{seq: m.Door, conn: c.(*net.UnixConn)}
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *Sandbox) warmArgs() []string {
	args := append([]string(nil), s.baseArgs...)
	args = append(args, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--dir", "/work", "--remount-ro", "/", "--chdir", "/work", "--clearenv")
	for _, kv := range s.env(&Spec{}, "/work") {
		args = append(args, "--setenv", kv[0], kv[1])
	}
	return append(args, "--", s.cfg.PythonPath, "-B", "/run/infill/runner.py", "serve",
		strconv.FormatInt(s.cfg.TmpfsBytes, 10), strconv.FormatInt(s.cfg.TmpfsBytes+warmFilesBytes, 10))
}

// startWorker starts a warm sandbox and waits until its runner is ready.
func (s *Sandbox) startWorker() (*worker, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: socketpair: %v", ErrSetup, err)
	}
	ours := os.NewFile(uintptr(fds[0]), "warm-control")
	theirs := os.NewFile(uintptr(fds[1]), "warm-control-runner")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: control socket: %v", ErrSetup, err)
	}
	w := &worker{ctrl: fc.(*net.UnixConn), stderr: &tailWriter{max: 4096},
		ready: make(chan struct{}), doors: make(chan warmDoor, 8), exited: make(chan struct{})}
	cmd := exec.Command(s.bwrap, s.warmArgs()...)
	cmd.Env = []string{}
	cmd.Stdout = w.stderr
	cmd.Stderr = w.stderr
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.asRoot {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), Groups: []uint32{}}
	}
	w.cmd = cmd
	if err := cmd.Start(); err != nil {
		w.ctrl.Close()
		return nil, fmt.Errorf("%w: starting bwrap: %v", ErrSetup, err)
	}
	theirs.Close()
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	go w.readControl()
	select {
	case <-w.ready:
		return w, nil
	case <-w.exited:
	case <-time.After(s.cfg.StartupTimeout):
	}
	w.kill()
	return nil, fmt.Errorf("%w: warm sandbox did not start: %s", ErrSetup, lastLine(w.stderr.String()))
}

// probeWarm starts one warm sandbox and checks that a sample runs in a
// PID namespace of its own (the sample is PID 2, its init PID 1) without
// capabilities; the sandbox is kept for the first run.
func (s *Sandbox) probeWarm() error {
	w, err := s.startWorker()
	if err != nil {
		return err
	}
	probe := "import os\nassert os.getpid() == 2, os.getpid()\n" +
		"caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd', 'CapPrm'))]\n" +
		"assert caps == ['0000000000000000'] * 3, caps\n"
	spec := Spec{Python: []string{"program", "probe.py"}, Files: map[string]string{"probe.py": probe}, Timeout: 20 * time.Second, Warm: true}
	res, healthy, err := s.runOn(context.Background(), w, &spec)
	if err == nil && !res.Passed() {
		err = fmt.Errorf("probe failed: %s exit %d: %s", res.Status, res.ExitCode, lastLine(res.Stderr))
	}
	if err != nil || !healthy {
		w.kill()
		if err == nil {
			err = errors.New("probe left the warm sandbox unusable")
		}
		return err
	}
	s.warm.put(w)
	return nil
}

// runWarm runs spec on an idle warm sandbox, starting one when none is idle.
func (s *Sandbox) runWarm(ctx context.Context, spec *Spec) (Result, error) {
	w := s.warm.get()
	if w == nil {
		var err error
		if w, err = s.startWorker(); err != nil {
			return Result{}, err
		}
	}
	res, healthy, err := s.runOn(ctx, w, spec)
	if healthy {
		s.warm.put(w)
	} else {
		w.kill()
	}
	return res, err
}

// warmRequest is one sample for runner.py serve.
type warmRequest struct {
	Nonce   string              `json:"nonce"`
	Mode    string              `json:"mode"`
	Args    []string            `json:"args"`
	Cwd     string              `json:"cwd"`
	Files   map[string]string   `json:"files"`
	Env     map[string]string   `json:"env"`
	Rlimits map[string][2]int64 `json:"rlimits"`
}

// warmReply is what a sample's door says at its end.
type warmReply struct {
	Status *int   `json:"status"`
	Error  string `json:"error"`
	// eof: the door closed without a line (the sample was killed).
	eof bool
}

// runOn runs spec on w. healthy says whether w may run another sample.
func (s *Sandbox) runOn(ctx context.Context, w *worker, spec *Spec) (res Result, healthy bool, err error) {
	c := s.cfg
	lim := s.limitsFor(spec)
	nonce, err := newNonce()
	if err != nil {
		return Result{}, true, err
	}
	cwd := "/work"
	if spec.WorkName != "" {
		cwd += "/" + spec.WorkName
	}
	env := map[string]string{}
	for _, kv := range s.env(spec, cwd) {
		env[kv[0]] = kv[1]
	}
	req := warmRequest{
		Nonce: nonce, Mode: spec.Python[0], Args: spec.Python[1:],
		Cwd: cwd, Files: spec.Files, Env: env, Rlimits: map[string][2]int64{},
	}
	for _, r := range s.rlimits(lim, warmExtraProcesses) {
		req.Rlimits[r.python] = [2]int64{r.soft, r.hard}
	}
	if req.Files == nil {
		req.Files = map[string]string{}
	}
	payload, err := json.Marshal(&req)
	if err != nil {
		return Result{}, true, fmt.Errorf("%w: %v", ErrSetup, err)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cp := newCapture(&c, cancel, lim.timeout)
	cp.launch(c.StartupTimeout, false)

	// The prepared sample: ready already, unless runs come faster than the
	// runner prepares them.
	var door warmDoor
	select {
	case d, ok := <-w.doors:
		if !ok {
			cp.stop(&res)
			return Result{}, false, fmt.Errorf("%w: warm sandbox stopped: %s", ErrSetup, lastLine(w.stderr.String()))
		}
		door = d
	case <-runCtx.Done():
		cp.stop(&res)
		if ctx.Err() != nil {
			return Result{}, true, ctx.Err()
		}
		return Result{}, false, fmt.Errorf("%w: the warm sandbox prepared no sample within %v", ErrSetup, c.StartupTimeout)
	}
	defer door.conn.Close()

	// Fresh pipes for this sample: ours read, the sample writes.
	var readEnds, writeEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for range 3 {
		r, wr, err := os.Pipe()
		if err != nil {
			closeAll(readEnds)
			closeAll(writeEnds)
			cp.stop(&res)
			return Result{}, false, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		readEnds, writeEnds = append(readEnds, r), append(writeEnds, wr)
	}
	defer closeAll(readEnds)
	msg := make([]byte, 5+len(payload))
	msg[0] = 'R'
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(payload)))
	copy(msg[5:], payload)
	oob := syscall.UnixRights(int(writeEnds[0].Fd()), int(writeEnds[1].Fd()), int(writeEnds[2].Fd()))
	_ = door.conn.SetWriteDeadline(time.Now().Add(c.StartupTimeout))
	n, _, err := door.conn.WriteMsgUnix(msg, oob, nil)
	if err == nil && n < len(msg) {
		_, err = door.conn.Write(msg[n:])
	}
	closeAll(writeEnds)
	if err != nil {
		cp.stop(&res)
		return Result{}, false, fmt.Errorf("%w: warm sandbox: sending the sample: %v", ErrSetup, err)
	}

	var copies sync.WaitGroup
	for i, dst := range []io.Writer{cp.stdout, cp.stderr, cp.status} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(dst, readEnds[i])
		}()
	}
	replies := make(chan warmReply, 1)
	go func() {
		var r warmReply
		line, err := bufio.NewReader(door.conn).ReadString('\n')
		switch {
		case err == io.EOF && line == "":
			r.eof = true
		case err != nil && line == "":
			r.Error = fmt.Sprintf("reading the sample's status: %v", err)
		case json.Unmarshal([]byte(line), &r) != nil:
			r.Error = fmt.Sprintf("bad status line %q", line)
		}
		replies <- r
	}()

	var reply warmReply
	healthy = true
	killed := false
	select {
	case reply = <-replies:
	case <-runCtx.Done():
		// Timeout, flood or cancel: the runner kills the sample's namespace.
		killed = true
		if err := w.send('K', []byte(strconv.Itoa(door.seq))); err != nil {
			healthy = false
			w.kill()
		}
		select {
		case reply = <-replies:
		case <-time.After(warmKillGrace):
			healthy = false
			w.kill()
			_ = door.conn.Close()
			reply = <-replies
		}
	}
	if reply.Error != "" || (reply.eof && !killed) {
		healthy = false
	}
	// Every writer is gone once the namespace is; the deadline only guards
	// against a runner that kept a copy by mistake.
	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(warmKillGrace):
		for _, r := range readEnds {
			_ = r.SetReadDeadline(time.Now())
		}
		<-done
		healthy = false
	}

	res = Result{ExitCode: -1, Warm: true, limits: &runLimits{cfg: &s.cfg, lim: lim}}
	cp.stop(&res)
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, errWallTimeout):
		res.Status = StatusTimeout
		s.noteCut(&res, lim)
		return res, healthy, nil
	case errors.Is(cause, errOutputLimit):
		res.Status = StatusOutputLimit
		s.noteCut(&res, lim)
		return res, healthy, nil
	case errors.Is(cause, errStartupTimeout):
		return res, false, fmt.Errorf("%w: the warm sandbox did not start the sample within %v", ErrSetup, c.StartupTimeout)
	case ctx.Err() != nil:
		return res, healthy, ctx.Err()
	}
	if reply.Error != "" || reply.Status == nil {
		msg := reply.Error
		if msg == "" {
			msg = "the sample ended without a status"
		}
		return res, false, fmt.Errorf("%w: warm sandbox: %s", ErrSetup, msg)
	}
	ws := syscall.WaitStatus(*reply.Status)
	switch {
	case ws.Signaled():
		res.Status, res.Signal = StatusSignaled, int(ws.Signal())
		if ws.Signal() == syscall.SIGXCPU {
			res.Status = StatusTimeout
		}
	default:
		res.Status, res.ExitCode = StatusExited, ws.ExitStatus()
	}
	cp.finish(&res, nonce)
	if !cp.isStarted() && res.ExitCode != 0 && res.Env == "" {
		return res, healthy, fmt.Errorf("%w: the sample did not start (exit %d): %s", ErrSetup, res.ExitCode, lastLine(res.Stderr))
	}
	res.NoteLimit(res.Passed())
	return res, healthy, nil
}
