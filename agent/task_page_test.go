package agent_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

func TestTaskPage(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	var want []string
	for range 7 {
		task := submit(t, a, "echo", `{}`)
		waitFinal(t, a, task.ID)
		want = append([]string{task.ID}, want...) // newest first
	}
	var got []string
	q := agent.TaskPageQuery{PageSize: 3, Status: wire.StatusCompleted}
	for pages := 1; ; pages++ {
		list, err := a.TaskPage(q)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Tasks) > 3 || pages > 4 {
			t.Fatalf("page %d has %d tasks", pages, len(list.Tasks))
		}
		for _, r := range list.Tasks {
			if r.Result != nil || len(r.History) != 0 {
				t.Errorf("listed task %s carries its result or history", r.TaskID)
			}
			got = append(got, r.TaskID)
		}
		if list.NextPageToken == "" {
			break
		}
		q.PageToken = list.NextPageToken
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paged tasks = %v, want %v", got, want)
	}
	if list, err := a.TaskPage(agent.TaskPageQuery{}); err != nil || len(list.Tasks) != 7 {
		t.Errorf("default page = %v, %v; want the 7 tasks", list, err)
	}
	for name, c := range map[string]struct {
		q     agent.TaskPageQuery
		field string
	}{
		"page too large": {agent.TaskPageQuery{PageSize: agent.MaxTaskPageSize + 1}, "page_size"},
		"negative page":  {agent.TaskPageQuery{PageSize: -1}, "page_size"},
		"not a state":    {agent.TaskPageQuery{Status: "bogus"}, "status"},
	} {
		_, err := a.TaskPage(c.q)
		if we := wantCode(t, err, wire.CodeInvalidParams); we.Details["field"] != c.field {
			t.Errorf("%s: details %v, want field %s", name, we.Details, c.field)
		}
	}
	_, err := a.TaskPage(agent.TaskPageQuery{Status: "bogus"})
	if !strings.Contains(err.Error(), "completed") {
		t.Errorf("error %q does not list the states", err)
	}
}
