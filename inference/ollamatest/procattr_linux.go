package ollamatest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr puts the server in its own process group (so Stop reaches its
// model runners) and kills it if the test process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupMembers lists the processes of process group pgid (from /proc).
func groupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid { // field 5, pgrp
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// stopped reports whether every thread of pid is stopped (state T or t), or
// pid is gone. kill(SIGSTOP) returns before the threads stop: a thread busy
// on a loaded machine stops only once it is next scheduled.
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		f, err := procStat(tid) // /proc/TID/stat: that thread's state
		if err == nil && f[0] != "T" && f[0] != "t" {
			return false
		}
	}
	return true
}

// cpuTime is utime + stime of pid.
func cpuTime(pid int) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	const clkTck = 100 // USER_HZ on every Linux architecture Go supports
	return time.Duration(ut+st) * time.Second / clkTck, nil
}

// procStat returns the fields of /proc/pid/stat after the command name
// (field 3, the state, first).
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the name may contain spaces and parentheses
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}
