package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrReadOnly is returned for a command that a client guarded by GuardReadOnly refuses to send.
var ErrReadOnly = errors.New("redisconn: read-only mode refuses to send a write command")

// readCommands are the only commands a read-only client sends (an allowlist: anything else,
// including every write, is refused). CONFIG, CLIENT and CLUSTER are checked by sub-command.
var readCommands = map[string]bool{
	"scan": true, "get": true, "pttl": true, "ttl": true, "type": true, "exists": true,
	"mget": true, "strlen": true, "dbsize": true, "ping": true, "info": true, "echo": true,
	"hello": true, "auth": true, "select": true, "readonly": true, "command": true,
	"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true, "quit": true, "time": true,
}

// IsReadCommand reports whether a client guarded by GuardReadOnly may send cmd.
func IsReadCommand(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	args := cmd.Args()
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(fmt.Sprint(args[1]))
	}
	switch name {
	case "config":
		return sub == "get"
	case "cluster":
		return sub == "slots" || sub == "shards" || sub == "nodes" || sub == "info"
	case "client":
		// maint_notifications is part of go-redis' handshake on Cluster nodes: it sets what
		// the connection itself is told, nothing in the data.
		return sub == "setinfo" || sub == "setname" || sub == "getname" || sub == "id" || sub == "info" ||
			sub == "maint_notifications"
	}
	return readCommands[name]
}

// guardTimeout bounds the look-up of a Cluster's nodes when GuardReadOnly guards them.
const guardTimeout = 2 * time.Second

// GuardReadOnly makes client refuse, with ErrReadOnly, every command that is not a read
// (IsReadCommand), before it is sent: the defence in depth behind the disabled keys of the
// console's read-only mode (tui.Config.ReadOnly). It adds a go-redis hook to client. A
// ClusterClient's hooks do not reach the clients of its nodes, which ForEachMaster and
// ForEachShard hand out (the console's refresh SCANs, the walk of operator's ReleaseAllWith):
// those get the hook too, the nodes to come through OnNewNode and the nodes the client already
// knows (it was used before, e.g. to check that Redis answers) through ForEachShard, which makes
// no round trip when the cluster state is loaded (else one CLUSTER SLOTS, bounded by ctx and
// guardTimeout, whose new nodes OnNewNode guards).
// shared.
func GuardReadOnly(ctx context.Context, client redis.UniversalClient) {
	client.AddHook(readOnlyHook{})
	cluster, ok := client.(*redis.ClusterClient)
	if !ok {
		return
	}
	var guarded sync.Map // *redis.Client → struct{}: one hook per node client
	guard := func(node *redis.Client) {
		if _, dup := guarded.LoadOrStore(node, struct{}{}); !dup {
			node.AddHook(readOnlyHook{})
		}
	}
	cluster.OnNewNode(guard)
	ctx, cancel := context.WithTimeout(ctx, guardTimeout)
	defer cancel()
	_ = cluster.ForEachShard(ctx, func(_ context.Context, node *redis.Client) error {
		guard(node)
		return nil
	})
}

// readOnlyHook refuses every command that is not a read (GuardReadOnly).
type readOnlyHook struct{}

// DialHook passes dials through.
func (readOnlyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook refuses a single command that is not a read.
func (readOnlyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !IsReadCommand(cmd) {
			err := fmt.Errorf("%w: %s", ErrReadOnly, cmd.Name())
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook refuses a whole pipeline that holds a command that is not a read.
func (readOnlyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if !IsReadCommand(cmd) {
				err := fmt.Errorf("%w: %s", ErrReadOnly, cmd.Name())
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}
