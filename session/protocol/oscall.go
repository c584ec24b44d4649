package protocol

import (
	"fmt"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// osStr is a str or Path argument as a string, "" when it is missing or
// of another type (the parent answers such a call as it sees fit).
func osStr(call *runtime.OSCall, i int, name string) string {
	s, _ := call.Str(i, name)
	return s
}

func osBool(call *runtime.OSCall, i int, name string) bool {
	v, _ := call.Arg(i, name)
	b, _ := v.(object.Bool)
	return bool(b)
}

func osFloat(call *runtime.OSCall, i int, name string) float64 {
	v, _ := call.Arg(i, name)
	switch f := v.(type) {
	case object.Float:
		return float64(f)
	case object.Int:
		return float64(f)
	}
	return 0
}

// pathArms are the OS calls whose one argument is a path.
var pathArms = map[string]func(*pb.OsCall, string){
	"Path.exists":     func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Exists{Exists: p} },
	"Path.is_file":    func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_IsFile{IsFile: p} },
	"Path.is_dir":     func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_IsDir{IsDir: p} },
	"Path.is_symlink": func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_IsSymlink{IsSymlink: p} },
	"Path.read_text":  func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_ReadText{ReadText: p} },
	"Path.read_bytes": func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_ReadBytes{ReadBytes: p} },
	"Path.stat":       func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Stat{Stat: p} },
	"Path.iterdir":    func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Iterdir{Iterdir: p} },
	"Path.resolve":    func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Resolve{Resolve: p} },
	"Path.absolute":   func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Absolute{Absolute: p} },
	"Path.unlink":     func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Unlink{Unlink: p} },
	"Path.rmdir":      func(c *pb.OsCall, p string) { c.Call = &pb.OsCall_Rmdir{Rmdir: p} },
}

// scanCall is the wire form of a Path.scan of path.
func scanCall(call *runtime.OSCall, path string) *pb.OsCall_Scan {
	s := &pb.OsCall_Scan{Path: path, FollowSymlinks: osBool(call, 2, "follow_symlinks"), RecurseSymlinks: osBool(call, 5, "recurse_symlinks")}
	if v, ok := call.Arg(1, "max_depth"); ok {
		if n, ok := v.(object.Int); ok && n >= 0 {
			d := uint32(min(int64(n), 1<<31))
			s.MaxDepth = &d
		}
	}
	if v, ok := call.Arg(3, "pattern"); ok {
		if l, ok := v.(object.List); ok {
			for _, p := range l {
				if ps, ok := p.(object.Str); ok {
					s.Pattern = append(s.Pattern, string(ps))
				}
			}
		}
	}
	if v, ok := call.Arg(4, "case_sensitive"); ok {
		if b, ok := v.(object.Bool); ok {
			cs := bool(b)
			s.CaseSensitive = &cs
		}
	}
	return s
}

// osCallEvent is the wire form of an OS call the interpreter made, as
// upstream's worker sends it. sleepArm renames the sleeps by the session's
// sleep mode: "system.sleep" is what the interpreter always asks, and the
// policy decides whether the parent sees a system sleep or a host sleep.
func osCallEvent(call *runtime.OSCall, hostSleep bool) (*pb.OsCall, error) {
	ev := &pb.OsCall{CallId: call.CallID, AllowEagerAwait: call.EagerAwait}
	path := osStr(call, 0, "path")
	if arm, ok := pathArms[call.Name]; ok {
		arm(ev, path)
		return ev, nil
	}
	switch call.Name {
	case "Path.write_text", "Path.append_text":
		tw := &pb.OsCall_TextWrite{Path: path, Data: osStr(call, 1, "data")}
		if call.Name == "Path.write_text" {
			ev.Call = &pb.OsCall_WriteText{WriteText: tw}
		} else {
			ev.Call = &pb.OsCall_AppendText{AppendText: tw}
		}
	case "Path.write_bytes", "Path.append_bytes":
		v, _ := call.Arg(1, "data")
		data, _ := v.(object.Bytes)
		bw := &pb.OsCall_BytesWrite{Path: path, Data: data}
		if call.Name == "Path.write_bytes" {
			ev.Call = &pb.OsCall_WriteBytes{WriteBytes: bw}
		} else {
			ev.Call = &pb.OsCall_AppendBytes{AppendBytes: bw}
		}
	case "open":
		ev.Call = &pb.OsCall_Open_{Open: &pb.OsCall_Open{Path: path, Mode: osStr(call, 1, "mode")}}
	case "Path.mkdir":
		ev.Call = &pb.OsCall_Mkdir_{Mkdir: &pb.OsCall_Mkdir{Path: path, Parents: osBool(call, 1, "parents"), ExistOk: osBool(call, 2, "exist_ok")}}
	case "Path.rename":
		ev.Call = &pb.OsCall_Rename_{Rename: &pb.OsCall_Rename{Src: path, Dst: osStr(call, 1, "dst")}}
	case "Path.scan":
		ev.Call = &pb.OsCall_Scan_{Scan: scanCall(call, path)}
	case "os.getenv":
		def, ok := call.Arg(1, "default")
		if !ok {
			def = object.None{}
		}
		arena, roots, err := EncodeValues(def)
		if err != nil {
			return nil, err
		}
		ev.Values = arena
		ev.Call = &pb.OsCall_Getenv_{Getenv: &pb.OsCall_Getenv{Key: osStr(call, 0, "key"), Default: roots[0]}}
	case "os.environ":
		ev.Call = &pb.OsCall_GetEnviron{GetEnviron: &pb.Unit{}}
	case "date.today":
		ev.Call = &pb.OsCall_DateToday{DateToday: &pb.Unit{}}
	case "datetime.now":
		now := &pb.OsCall_DateTimeNow{}
		if v, ok := call.Arg(0, "tz"); ok {
			if tz, ok := v.(object.TimeZone); ok {
				now.Tz = &pb.TimeZone{OffsetSeconds: int32(tz.Offset), Name: tz.Name}
			}
		}
		ev.Call = &pb.OsCall_DateTimeNow_{DateTimeNow: now}
	case "os.urandom":
		v, _ := call.Arg(0, "size")
		n, _ := v.(object.Int)
		ev.Call = &pb.OsCall_Urandom_{Urandom: &pb.OsCall_Urandom{Size: uint64(max(n, 0))}}
	case "time.time":
		ev.Call = &pb.OsCall_Time{Time: &pb.OsCall_TimeCall{Caller: osStr(call, 0, "caller")}}
	case "system.sleep", "time.sleep":
		s := &pb.OsCall_Sleep{Seconds: osFloat(call, 0, "delay")}
		if hostSleep {
			ev.Call = &pb.OsCall_Sleep_{Sleep: s}
		} else {
			ev.Call = &pb.OsCall_SystemSleep{SystemSleep: s}
		}
	case "system.async_sleep", "asyncio.sleep":
		s := &pb.OsCall_AsyncSleep{Delay: osFloat(call, 0, "delay")}
		if hostSleep {
			ev.Call = &pb.OsCall_AsyncSleep_{AsyncSleep: s}
		} else {
			ev.Call = &pb.OsCall_AsyncSystemSleep{AsyncSystemSleep: s}
		}
	case "import":
		ev.Call = &pb.OsCall_Import_{Import: &pb.OsCall_Import{Module: osStr(call, 0, "module")}}
	case "import_stubs":
		v, _ := call.Arg(0, "modules")
		l, _ := v.(object.List)
		st := &pb.OsCall_ImportStubs{}
		for _, m := range l {
			if s, ok := m.(object.Str); ok {
				st.Modules = append(st.Modules, string(s))
			}
		}
		ev.Call = &pb.OsCall_ImportStubs_{ImportStubs: st}
	default:
		return nil, fmt.Errorf("monty.v1: the OS call %q has no wire form", call.Name)
	}
	return ev, nil
}
