package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

func TestPrune(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	owner, ms := star(t, clock, 1)
	member := ms[0]
	g := formGroup(t, owner, ms)
	v, _, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "t", Options: []string{"a", "b"}, DeadlineSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	gt, _, err := owner.gm.RunTask(ctx, g.GroupID, group.TaskRequest{TaskType: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	finalTask(t, owner, g.GroupID, gt.TaskID)
	clock.Advance(61 * time.Second)
	testutil.Eventually(t, pollTimeout, "the vote closed", func() bool { s, _, _ := voteState(owner, g.GroupID, v.VoteID); return s == group.VoteClosed })
	if _, _, err := member.gm.Leave(ctx, g.GroupID, ""); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, pollTimeout, "the owner alone", func() bool { return len(memberIDs(owner, g.GroupID)) == 1 })
	// The member's copy takes the owner's announcement of the leave
	// asynchronously; prune only once it has it, or it would bring the
	// group back.
	testutil.Eventually(t, pollTimeout, "the member's copy without the member", func() bool { return len(memberIDs(member, g.GroupID)) == 1 })

	if n, err := owner.gm.Prune(ctx); err != nil || n != 0 {
		t.Fatalf("Prune before the retention age: %d, %v; want nothing", n, err)
	}
	clock.Advance(169 * time.Hour)
	t.Run("closed votes and finished tasks go", func(t *testing.T) {
		n, err := owner.gm.Prune(ctx)
		if err != nil || n != 2 {
			t.Fatalf("Prune = %d, %v; want the vote and the task", n, err)
		}
		_, err = owner.gm.Vote(g.GroupID, v.VoteID)
		wantCode(t, err, wire.CodeNotFound)
		_, err = owner.gm.Task(g.GroupID, gt.TaskID)
		wantCode(t, err, wire.CodeNotFound)
		if _, err := owner.gm.Group(g.GroupID); err != nil {
			t.Errorf("the active group was pruned: %v", err)
		}
	})
	t.Run("a group left long ago goes with everything", func(t *testing.T) {
		if n, err := member.gm.Prune(ctx); err != nil || n < 1 {
			t.Fatalf("member Prune = %d, %v", n, err)
		}
		_, err := member.gm.Group(g.GroupID)
		wantCode(t, err, wire.CodeNotFound)
		if n := member.gm.LastEvent(g.GroupID); n != 0 {
			t.Errorf("events left: last seq %d", n)
		}
	})
}
