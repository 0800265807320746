package nomad

import (
	"errors"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// monitorLeadership follows raft leadership changes and starts or stops
// the leader's duties.
func (s *Server) monitorLeadership() {
	leaderCh := s.raft.LeaderCh()
	for {
		select {
		case isLeader := <-leaderCh:
			if isLeader {
				if err := s.establishLeadership(); err != nil {
					s.logger.Error("failed to establish leadership", "error", err)
					s.revokeLeadership()
				}
			} else {
				s.revokeLeadership()
			}
		case errCh := <-s.reassertCh:
			errCh <- s.reassertLeadership()
		case <-s.shutdownCh:
			return
		}
	}
}

// reassertLeadership rebuilds the leader's duties from the state store as
// it now is, as a new leader would; it refuses when this server no longer
// leads.
func (s *Server) reassertLeadership() error {
	if !s.IsLeader() {
		return structs.ErrNotLeader
	}
	s.revokeLeadership()
	if err := s.establishLeadership(); err != nil {
		s.revokeLeadership()
		return err
	}
	return nil
}

// establishLeadership starts the leader's duties once the FSM has applied
// everything committed before this term.
func (s *Server) establishLeadership() error {
	if err := s.raft.Barrier(time.Minute).Error(); err != nil {
		return err
	}
	// Before the duties: variable writes need an active root key.
	if err := s.initializeKeyring(); err != nil {
		s.logger.Error("failed to initialize the keyring", "error", err)
	}
	// After the keyring, which seals its key; before nodes need it.
	if err := s.ensureTLSCA(); err != nil {
		s.logger.Error("failed to create the cluster TLS CA", "error", err)
	}
	// Before the duties: followers' workers prove it to reach the broker.
	if err := s.ensureServerIdentity(); err != nil {
		s.logger.Error("failed to write the servers' identity", "error", err)
	}
	s.leaderLock.Lock()
	defer s.leaderLock.Unlock()
	stopCh := make(chan struct{})
	s.leaderStop = stopCh
	duties := s.leaderDuties()
	for _, d := range duties {
		if d.start != nil {
			d.start()
		}
	}
	s.isLeader.Store(true)
	s.leaderChange.notify()
	// The duties run from here on, even if a step below fails: the
	// revoke that follows a failure then stops what start began.
	defer s.startDuties(duties, stopCh)

	// A broker paused by the scheduler configuration (in raft) stays
	// paused under the new leader: it starts disabled.
	_, schedCfg, err := s.State().SchedulerConfig(nil)
	if err != nil {
		return err
	}
	s.brokerPaused = schedCfg.PauseEvalBroker
	s.planQueue.SetEnabled(true)
	if err := s.enableEvalBrokerLocked(); err != nil {
		return err
	}
	if err := s.heartbeats.initialize(); err != nil {
		return err
	}
	s.logger.Info("cluster leadership acquired")
	return nil
}

// leaderDuty is one of the leader's duties: run does it until stop closes
// (leadership lost or the server shutting down), then returns. Each
// rebuilds what it needs from the state store when it starts.
type leaderDuty struct {
	name string
	// start, if set, runs before the server answers as leader, for what
	// an RPC handled by the new leader needs in place at once.
	start func()
	run   func(stop <-chan struct{})
}

// leaderDuties are the duties establishLeadership starts, each on its own
// goroutine, and revokeLeadership stops by closing their stop channel.
func (s *Server) leaderDuties() []leaderDuty {
	return []leaderDuty{
		{name: "raft_membership", run: s.raftMembership},
		{name: "core_gc", run: s.runCoreGC},
		{name: "plan_apply", run: s.planApply},
		{name: "reap_failed_evals", run: s.reapFailedEvals},
		{name: "reap_dup_blocked_evals", run: s.reapDupBlockedEvals},
		{name: "drainer", run: s.drainer().run},
		{name: "deployment_watcher", run: s.deploymentWatcher().run},
		{name: "periodic_dispatcher", run: s.runPeriodicDispatcher},
		{name: "leader_metrics", run: s.publishGauges},
		{name: "site_outages", run: s.siteOutageWatch().run},
		{name: "node_sessions", start: s.ledger.reset, run: s.runNodeSessions},
		{name: "variable_locks", start: s.varLocks.enable, run: s.varLocks.run},
		{name: "keyring_rekey", run: s.rekeyDuty},
		{name: "acl_replication", run: s.replicateACLs},
	}
}

// startDuties runs every leader duty on the server's wait group until
// stop closes; Shutdown waits for them.
func (s *Server) startDuties(duties []leaderDuty, stop <-chan struct{}) {
	for _, d := range duties {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			d.run(stop)
			s.logger.Debug("leader duty stopped", "duty", d.name)
		}()
	}
}

// revokeLeadership stops the leader's duties.
func (s *Server) revokeLeadership() {
	s.leaderLock.Lock()
	defer s.leaderLock.Unlock()
	if !s.isLeader.Swap(false) {
		return
	}
	s.leaderChange.notify()
	close(s.leaderStop)
	s.evalBroker.SetEnabled(false)
	s.blockedEvals.SetEnabled(false)
	s.planQueue.SetEnabled(false)
	s.heartbeats.stopAll()
	s.ledger.reset()
	s.logger.Info("cluster leadership lost")
}

// enableEvalBrokerLocked enables the eval broker and blocked evaluations
// and refills them from the state store, unless the scheduler
// configuration pauses the broker. leaderLock must be held.
func (s *Server) enableEvalBrokerLocked() error {
	if s.brokerPaused {
		s.logger.Info("eval broker paused by the scheduler configuration")
		return nil
	}
	s.evalBroker.SetEnabled(true)
	s.blockedEvals.SetEnabled(true)
	return s.restoreEvals()
}

// setEvalBrokerPaused pauses or resumes the leader's eval broker as the
// scheduler configuration says; the FSM calls it on every server as the
// configuration applies, and a follower only remembers it. A paused
// broker is disabled, as upstream's: it holds and hands out nothing, and
// resuming rebuilds it from the state store, so evaluations written or
// deleted meanwhile are seen as they are stored.
func (s *Server) setEvalBrokerPaused(paused bool) {
	s.leaderLock.Lock()
	defer s.leaderLock.Unlock()
	if s.brokerPaused == paused {
		return
	}
	s.brokerPaused = paused
	if !s.isLeader.Load() {
		return
	}
	if paused {
		s.evalBroker.SetEnabled(false)
		s.blockedEvals.SetEnabled(false)
		s.logger.Info("eval broker paused by the scheduler configuration")
		return
	}
	if err := s.enableEvalBrokerLocked(); err != nil {
		s.logger.Error("failed to restore evaluations on resuming the eval broker", "error", err)
	}
	s.logger.Info("eval broker resumed by the scheduler configuration")
}

// waitOrStop waits d on the server's clock; false if stop closed first.
func (s *Server) waitOrStop(stop <-chan struct{}, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C():
		return true
	}
}

// restoreEvals puts every pending evaluation in the broker and every
// blocked one in the blocked set: the previous leader's queues are gone.
func (s *Server) restoreEvals() error {
	iter, err := s.State().Evals(nil)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		ev := raw.(*structs.Evaluation)
		switch {
		case ev.ShouldEnqueue():
			s.evalBroker.Enqueue(ev)
		case ev.ShouldBlock():
			s.blockedEvals.Block(ev)
		}
	}
	return nil
}

// reapFailedEvals marks evaluations that exhausted their deliveries as
// failed, with a delayed follow-up so the job is retried later.
func (s *Server) reapFailedEvals(stopCh <-chan struct{}) {
	for {
		select {
		case <-stopCh:
			return
		default:
		}
		ev, token, err := s.evalBroker.Dequeue([]string{FailedQueue}, time.Second)
		if errors.Is(err, ErrBrokerDisabled) {
			// Paused by the scheduler configuration: Dequeue returns at
			// once, so wait rather than spin.
			if !s.waitOrStop(stopCh, time.Second) {
				return
			}
			continue
		}
		if err != nil || ev == nil {
			continue
		}
		now := s.clock.Now()
		failed := ev.Copy()
		failed.Status = structs.EvalStatusFailed
		failed.StatusDescription = "evaluation reached delivery limit"
		followup := ev.CreateFailedFollowUpEval(time.Minute, now)
		followup.WaitUntil = now.Add(time.Minute)
		failed.NextEval = followup.ID
		req := &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{failed, followup}, UpdatedAt: now.UnixNano()}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, req); err != nil {
			s.logger.Error("failed to mark evaluation failed", "eval_id", ev.ID, "error", err)
			_ = s.evalBroker.Nack(ev.ID, token)
			continue
		}
		_ = s.evalBroker.Ack(ev.ID, token)
	}
}

// reapDupBlockedEvals cancels evaluations superseded by newer ones for the
// same job: duplicate blocked evaluations, and pending ones the broker set
// aside because a newer evaluation of the job was processed.
func (s *Server) reapDupBlockedEvals(stopCh <-chan struct{}) {
	for {
		select {
		case <-stopCh:
			return
		default:
		}
		dups := s.blockedEvals.GetDuplicates(time.Second)
		dups = append(dups, s.evalBroker.Cancelable(100)...)
		if len(dups) == 0 {
			// A paused broker's blocked evaluations are disabled too and
			// GetDuplicates returns at once: wait rather than spin.
			if !s.evalBroker.Enabled() && !s.waitOrStop(stopCh, time.Second) {
				return
			}
			continue
		}
		now := s.clock.Now().UnixNano()
		var cancel []*structs.Evaluation
		for _, d := range dups {
			// Both sources hand out copies already marked canceled.
			c := d.Copy()
			c.Status = structs.EvalStatusCancelled
			c.ModifyTime = now
			cancel = append(cancel, c)
		}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: cancel, UpdatedAt: now}); err != nil {
			s.logger.Error("failed to cancel duplicate blocked evaluations", "error", err)
		}
	}
}
