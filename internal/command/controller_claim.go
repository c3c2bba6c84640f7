package command

import (
	"context"
	"errors"

	"github.com/trialform/trialform/state"
)

// The controller claim (state.Claimer): a controller, with or without
// -leader-elect, plans and applies only while it holds the claim of the
// state it reconciles, taken through the state backend itself; another
// controller on the same state stands by (as a leader election standby
// does) and takes the claim once its holder stops or dies. It excludes no
// person's plan or apply, and no experiment's lock.

// holdClaim takes the claim of the state, or checks that it still holds
// it: true when this controller may plan and apply now.
func (c *ctrl) holdClaim(ctx context.Context) bool {
	cl, ok := c.m.(state.Claimer)
	if !ok {
		if !c.claimWarned {
			c.claimWarned = true
			c.log.Warn("the state backend cannot be claimed: run one controller on this state, or several with -leader-elect", "backend", c.m.Name())
		}
		c.claimed()
		return true
	}
	if c.claim != nil {
		err := c.claim.Lost()
		if err == nil {
			c.claimed()
			return true
		}
		if state.IsUnavailable(err) {
			// pg after a server restart: no pass until it is taken again.
			c.log.Warn("the claim of the state is being taken again; no plan or apply meanwhile", "error", c.redact(err.Error()))
			c.setClaimedBy("(the claim is being taken again after a lost connection)")
			return false
		}
		c.log.Error("lost the claim of the state: standing by, no plan or apply until this controller claims it again", "error", c.redact(err.Error()),
			"claim_id", c.claim.Info().ID)
		c.claim.Unlock()
		c.claim = nil
		c.claimLogged = ""
	}
	op := c.leader.lockOperation()
	lk, err := cl.Claim(ctx, op, Version)
	if err != nil && c.leader.enabled && c.takeOverLock(ctx, err) {
		// A former leader's claim (killed, or paused past its term).
		lk, err = cl.Claim(ctx, op, Version)
	}
	if err != nil {
		c.metrics.Leader.Set(0)
		var le *state.LockedError
		if !errors.As(err, &le) {
			c.log.Error("claim the state", "error", c.redact(err.Error()))
			c.setClaimedBy("(the claim could not be taken: " + c.redact(err.Error()) + ")")
			return false
		}
		holder := state.ClaimHolder(le.Info)
		if le.Info.ID == "" {
			holder = "another controller (its record is not readable yet)"
		}
		if key := le.Info.ID; key != c.claimLogged || key == "" {
			c.claimLogged = key
			c.log.Info("standing by: another controller reconciles this state", "holder", holder, "claim_id", le.Info.ID, "where", le.Info.Path,
				"what_to_do", "nothing while it runs: this controller takes over when it stops or dies; to move the state to this one, stop the other "+
					"(a killed one frees it at once, pg: with its session, kubernetes: once its Lease is not renewed for the -claim-duration its holder was given, 15s by default); if it is gone but the claim stays, trialform force-unlock "+le.Info.ID)
		}
		c.setClaimedBy(holder)
		return false
	}
	c.claim = lk
	c.claimLogged = ""
	c.log.Info("claimed the state: this controller reconciles it", "claim_id", lk.Info().ID, "where", lk.Info().Path)
	c.claimed()
	return true
}

// claimed notes that this controller holds the claim (or needs none).
func (c *ctrl) claimed() {
	c.setClaimedBy("")
	if c.leader.leaderCtx(context.Background()) != nil {
		c.metrics.Leader.Set(1)
	}
}

func (c *ctrl) setClaimedBy(holder string) {
	c.mu.Lock()
	c.claimedBy = holder
	c.mu.Unlock()
}

// mayWrite reports, right before a write, whether this controller may
// write: it leads (leaderState.stillLeading) and has not lost its claim.
func (c *ctrl) mayWrite() bool {
	if !c.leader.stillLeading() {
		return false
	}
	if c.claim != nil {
		if err := c.claim.Lost(); err != nil {
			c.log.Error("the claim of the state is lost: not writing", "error", c.redact(err.Error()))
			return false
		}
	}
	return true
}

// status is what /readyz says after "ready": the election's status, or
// "standby (state claimed by: HOLDER)" while another controller holds
// the claim ("" for a controller that acts without -leader-elect).
func (c *ctrl) status() string {
	c.mu.Lock()
	by := c.claimedBy
	c.mu.Unlock()
	st := c.leader.status()
	if by != "" && (st == "" || st == "leader") {
		return "standby (state claimed by: " + by + ")"
	}
	return st
}
