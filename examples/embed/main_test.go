package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEmbed runs the program on a free port, adds 2 and 3 through the
// REST API with the admin token it wrote, and stops it.
func TestEmbed(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--data", dir, "--listen", "127.0.0.1:0"}, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run ended before serving: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not serving after 20s")
	}
	token, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/synapse/task?wait=10",
		strings.NewReader(`{"task_type":"add","payload":{"a":2,"b":3}}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var task struct {
		Status string `json:"status"`
		Result struct {
			Sum int `json:"sum"`
		} `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&task)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || task.Status != "completed" || task.Result.Sum != 5 {
		t.Fatalf("add answered %d %+v (%v), want 200 completed with sum 5", resp.StatusCode, task, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop after its context ended")
	}
}
