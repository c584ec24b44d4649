;; A module with the exports of the interpreter's ABI whose monty_call
;; makes one memory access a test asks for, anywhere: translated by
;; scripts/aot.sh with the interpreter's edits into package stray, it shows
;; that a stray load or store traps (docs/building.md, guard pages).
;;
;; monty_call(op, addr, value) makes access op at addr:
;;   0 i32.load8_u   1 i32.store8 of value   2 i32.load   3 i32.store
;;   4 i64.load and  5 i64.store with the largest offset (4 GiB - 1)
;;   6 i32.load16_u  7 memory.grow by value pages, the old size
;;   8 memory.size   9 i32.load8_u with the largest offset
;;  10 monty.print of value bytes at addr, its result
;;  11 monty.print of value bytes at addr, then i32.load8_u at addr + value
;;  12 memory.fill at addr of value >> 8 bytes (unsigned) with the byte value & 0xff
;;  13 memory.grow by value pages, then i32.store8 of 0x5a at addr and
;;     i32.load8_u at addr, in the same function (whatever the grow gave)
;; and returns what it loaded (or 0 after a store or a fill).
(module
  (import "monty" "print" (func $print (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1 65536)
  (func (export "_initialize"))
  (func (export "monty_abi_version") (result i32) (i32.const 1))
  (func (export "monty_reserve") (param i32) (result i32) (i32.const 0))
  (func (export "monty_release"))
  ;; monty_call's work is a function of its own, as the interpreter's is:
  ;; scripts/aot.sh gives translated functions, not exports, their view of
  ;; linear memory.
  (func (export "monty_call") (param $op i32) (param $addr i32) (param $value i32) (result i64)
    (call $access (local.get $op) (local.get $addr) (local.get $value)))
  (func $access (param $op i32) (param $addr i32) (param $value i32) (result i64)
    (block $grow_access
    (block $fill
    (block $print_load
    (block $print
    (block $load8_max
    (block $size
    (block $grow
    (block $load16
    (block $store64_max
    (block $load64_max
    (block $store32
    (block $load32
    (block $store8
    (block $load8
      (br_table $load8 $store8 $load32 $store32 $load64_max $store64_max $load16 $grow $size $load8_max $print $print_load $fill $grow_access
        (local.get $op))
      (unreachable))
      (return (i64.extend_i32_u (i32.load8_u (local.get $addr)))))
      (i32.store8 (local.get $addr) (local.get $value))
      (return (i64.const 0)))
      (return (i64.extend_i32_u (i32.load (local.get $addr)))))
      (i32.store (local.get $addr) (local.get $value))
      (return (i64.const 0)))
      (return (i64.load offset=4294967295 (local.get $addr))))
      (i64.store offset=4294967295 (local.get $addr) (i64.extend_i32_u (local.get $value)))
      (return (i64.const 0)))
      (return (i64.extend_i32_u (i32.load16_u (local.get $addr)))))
      (return (i64.extend_i32_s (memory.grow (local.get $value)))))
      (return (i64.extend_i32_u (memory.size))))
      (return (i64.extend_i32_u (i32.load8_u offset=4294967295 (local.get $addr)))))
      (return (i64.extend_i32_u (call $print (i32.const 1) (local.get $addr) (local.get $value)))))
    (drop (call $print (i32.const 1) (local.get $addr) (local.get $value)))
    (return (i64.extend_i32_u (i32.load8_u (i32.add (local.get $addr) (local.get $value))))))
    (memory.fill (local.get $addr) (local.get $value) (i32.shr_u (local.get $value) (i32.const 8)))
    (return (i64.const 0)))
    (drop (memory.grow (local.get $value)))
    (i32.store8 (local.get $addr) (i32.const 0x5a))
    (i64.extend_i32_u (i32.load8_u (local.get $addr)))))
