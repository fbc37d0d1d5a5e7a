"""Runtime: `Kernel`, a loaded bundle that binds arguments and launches through the driver."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

from tilec.runtime import driver
from tilec.runtime.binding import (
    Binding,
    bind,
    check_disjoint,
    launch_symbols,
    scalar_value,
    user_params,
    written_spans,
)
from tilec.runtime.bundle import (
    Manifest,
    ScalarParam,
    TensorParam,
    read_bundle,
    read_special_ptx,
    read_wide_ptx,
    write_bundle,
)
from tilec.runtime.formula import all_hold
from tilec.runtime.maps import MapStore
from tilec.runtime.signature import Signer, signs_alike
from tilec.runtime.streams import current_stream, framework_of, stream_handle, stream_reader

# Plans a kernel keeps (one per distinct argument signature) before it starts over.
PLAN_LIMIT = 64


# Launches a plan keeps ready (one per context, pointers and scalar values) before it starts over.
LAUNCH_LIMIT = 256


class _Plan:
    """What `bind` computed for one argument signature, kept so that a later call with the
    same shapes, strides, dtypes, devices and pointer alignments launches without binding."""

    def __init__(
        self, m: Manifest, b: Binding, names: list[str], other: Kernel | None = None
    ) -> None:
        index = {name: i for i, name in enumerate(names)}
        self.grid, self.block, self.dynamic_smem = b.grid, b.block, b.dynamic_smem
        # Which PTX the plan launches: its key's shapes and strides decide it (bind's 2^31 rule,
        # then the specialisation's sizes).
        self.variant = b.variant
        # What reads the caller's framework's current stream at each launch (resolved once).
        self.current_stream = stream_reader(*framework_of(b))
        self.device = next((v.device for v in b.views.values() if v.device is not None), None)
        # Per launch parameter: ("arg", i) reads user argument i at each call (a tensor's
        # pointer); ("scalar", i) converts and checks it; ("tma", name) is the device copy of
        # tensor map `name` over that call's pointer; a size is fixed by the shapes.
        self.slots: list[tuple[str, int] | tuple[str, str] | ctypes._SimpleCData] = []
        for param, slot in zip(m.params, b.slots, strict=True):
            if isinstance(param, TensorParam):
                self.slots.append(("arg", index[param.name]))
            elif isinstance(param, ScalarParam):
                self.slots.append(("scalar", index[param.name]))
            elif isinstance(slot, tuple) and b.tma.get(slot[1]) is None:
                self.slots.append(ctypes.c_uint64(0))  # an optional map not made: null
            else:
                self.slots.append(slot)
        # Tensor maps: their encoding arguments (all but the address are fixed by the key),
        # the argument each covers, and the device copies made so far, by pointer.
        self.tma = b.tma
        self.tma_tensor = {d.name: index[d.tensor] for d in m.tma}
        self.maps: dict[tuple[int, str, int], tuple[int, bytes]] = {}  # -> (address, map)
        # Written tensors' byte spans: with two or more, each call checks they are disjoint
        # (their pointers change from call to call; their shapes and strides do not).
        spans = written_spans(m, b.views)
        self.written = spans if len(spans) > 1 else []
        self.index = index
        # The scalar arguments, by position; the launches made ready so far, by context,
        # pointers and scalars' bytes (`Kernel._prepare`): a repeated call packs nothing.
        self.scalars = [t[1] for t in self.slots if isinstance(t, tuple) and t[0] == "scalar"]
        self.launches: dict[tuple[Any, ...], list[Any]] = {}  # -> Kernel._prepare's
        self.other = other  # the variant(...) build that runs these launches, if one does
        self.signs_alike = False  # and it signs a call as the kernel does (`_signs_like`)


class Kernel:
    """A compiled kernel: `kernel(*tensors_and_scalars, stream=None)` launches it.

    The first call with a given argument signature binds the arguments (checks, sizes, grid);
    later calls with the same shapes, strides, dtypes, devices and pointer alignments reuse
    that plan and only read the pointers and scalars (`Kernel.plans` counts them).
    """

    def __init__(
        self,
        manifest: Manifest,
        ptx: str,
        wide_ptx: str = "",
        special_ptx: str = "",
        others: tuple[Kernel, ...] = (),
        sms: int | None = None,
    ) -> None:
        for kind, text, name in (
            ("wide", wide_ptx, manifest.wide_ptx_file),
            ("special", special_ptx, manifest.special_ptx_file),
        ):
            if bool(text) != bool(name):
                raise ValueError(
                    f"{manifest.entry}: the manifest names {kind} PTX {name!r}; "
                    f"{'got' if text else 'no'} {kind} PTX text"
                )
        if len(others) != len(manifest.variants):
            raise ValueError(
                f"{manifest.entry}: the manifest names {len(manifest.variants)} variant(s); "
                f"got {len(others)} variant kernel(s)"
            )
        self.manifest = manifest
        # variant(...) clauses: the kernel built with other parameters, each launched where its
        # conditions hold for the launch's sizes, the first that holds (decided once per
        # argument signature).
        self.others = others
        self.sms = sms  # with_sms(...): the SMs a persistent grid may take (None: all)
        self.ptx = ptx
        self.wide_ptx = wide_ptx  # the 64-bit-index variant, for tensors of 2^31+ elements
        self.special_ptx = special_ptx  # the specialize(...) variant, for the launches it names
        self._variants = {"": ptx, "wide": wide_ptx, "special": special_ptx}
        # (context, variant) → CUfunction; modules live as long.
        self._functions: dict[tuple[int, str], Any] = {}
        self._modules: dict[tuple[int, str], Any] = {}
        self._maps = MapStore()  # the tensor maps' device copies (runtime/maps.py)
        self._params = user_params(manifest)
        # Integer scalars a launch formula reads (grid(cdiv(max_q, BM))): their values are part
        # of a call's signature, as shapes are.
        self._keyed = launch_symbols(manifest)
        self._sign = Signer(self._params, self._keyed)
        self._scalars: dict[tuple[int, type, Any], ctypes._SimpleCData] = {}  # `_scalar`'s
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        # (context, variant) → the dynamic smem that function allows (an attribute per function).
        self._smem_set: dict[tuple[int, str], int] = {}
        self._cluster_sms: dict[int, int] = {}  # context → num_sms of a cluster kernel
        self._settled = True  # every map the launch being prepared passes is in place
        # A stateful kernel (manifest.stateful: its module's globals hold a launch's partial
        # sums) launches on one stream after another: context → the stream of its last launch.
        self._last_stream: dict[int, int] = {}

    @property
    def plans(self) -> int:
        """How many launch plans this kernel holds."""
        return len(self._plans)

    def __repr__(self) -> str:
        args = ", ".join(f"{p.name}: {p.dtype}" for p in user_params(self.manifest))
        return f"<tilec.Kernel {self.manifest.entry}({args}) for {self.manifest.target}>"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes this kernel (and its variants' bundles in it) as a bundle directory at `path`."""
        root = write_bundle(path, self.manifest, self.ptx, self.wide_ptx, self.special_ptx)
        for ref, other in zip(self.manifest.variants, self.others, strict=True):
            other.save(root / ref.bundle)
        return root

    def with_sms(self, count: int) -> Kernel:
        """This kernel (its variants too) with `num_sms` held to at most `count` SMs: a
        persistent grid then takes that many blocks (in a kernel of clusters, whole clusters
        that fit among them), and variant conditions that name `num_sms` read it too; a variant
        of clusters larger than `count` is not launched. Leaves SMs to other streams (CUTLASS's
        sm_count), and keeps clocks off the power limit when timing (docs/performance.md)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"with_sms: a positive SM count, got {count!r}")
        if count < self.manifest.cluster:
            raise ValueError(
                f"with_sms: {self.manifest.entry} launches clusters of "
                f"{self.manifest.cluster} blocks; {count} SMs hold none"
            )
        return self._limited(count)

    def _limited(self, count: int) -> Kernel:
        others = tuple(o._limited(count) for o in self.others)
        return Kernel(self.manifest, self.ptx, self.wide_ptx, self.special_ptx, others, count)

    def variant_for(self, b: Binding) -> Kernel | None:
        """The variant(...) build a launch bound as `b` runs instead of this one: the first
        whose conditions all hold; None where none does."""
        for ref, other in zip(self.manifest.variants, self.others, strict=True):
            if other.sms is not None and other.sms < other.manifest.cluster:
                continue  # held to fewer SMs than its cluster (with_sms)
            if all_hold(ref.when, b.symbols):
                return other
        return None

    def bind(self, *args: Any) -> Binding:
        """Checks the arguments and computes sizes and launch shape; needs no GPU."""
        return bind(self.manifest, args)

    def _function(self, ctx: int, variant: str) -> Any:
        """The entry of the ordinary PTX, or of the `variant` ("wide": 64-bit index,
        "special": specialize(...)), loaded once per context."""
        key = (ctx, variant)
        if key not in self._functions:
            ptx = self._variants[variant]
            try:
                module, function = driver.load_function(
                    ptx, self.manifest.entry, self._max_smem_hint()
                )
            except driver.CudaError as err:
                which = f"{variant} variant of " if variant else ""
                raise driver.CudaError(
                    f"{err} (loading {which}{self.manifest.entry!r}, built for "
                    f"{self.manifest.target})"
                ) from None
            self._modules[key], self._functions[key] = module, function
        return self._functions[key]

    def _max_smem_hint(self) -> int:
        smem = self.manifest.dynamic_smem
        return smem if isinstance(smem, int) else 0

    def _signature(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int], list[Any]]:
        return self._sign(args)

    def __call__(self, *args: Any, stream: Any = None) -> None:
        key, ptrs, _alive = self._signature(args)
        if not key:
            return self._launch_bound(args, stream)
        return self.call_signed(key, ptrs, args, stream)

    def _signs_like(self, other: Kernel) -> bool:
        """Whether `other` computes the same signature of a call as this kernel (the same
        parameters with the same alignments): a variant then takes this kernel's."""
        return signs_alike(self._params, other._params)

    def takes_key_of(self, params: list[Any]) -> bool:
        """Whether a call signed over `params` (the user parameters of a family or another
        kernel) is signed as this kernel signs it: the same arguments and alignments, and no
        scalar whose value a launch formula reads (a key over `params` has none)."""
        return not self._keyed and signs_alike(self._params, params)

    def call_signed(
        self, key: tuple[Any, ...], ptrs: list[int], args: tuple[Any, ...], stream: Any
    ) -> None:
        """A call whose signature (`_signature`) is known: its plan, made once, launched."""
        plan = self._plan(key, args)
        if plan.other is not None:  # a variant's launch: its signature is this one's
            if plan.signs_alike:
                return plan.other.call_signed(key, ptrs, args, stream)
            return plan.other(*args, stream=stream)
        return self.launch_planned(plan, ptrs, args, stream)

    def _plan(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Plan:
        plan = self._plans.get(key)
        if plan is None:  # bind (and check) once for this signature
            if len(self._plans) >= PLAN_LIMIT:
                self._plans.clear()
            b = bind(self.manifest, args, self.device_symbols)
            names = [p.name for p in self._params]
            plan = self._plans[key] = _Plan(self.manifest, b, names, self.variant_for(b))
            plan.signs_alike = plan.other is not None and self._signs_like(plan.other)
        return plan

    def planned(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[Kernel, _Plan] | None:
        """The kernel (this one or a variant) and the plan that launch calls signed `key` (the
        plan made once, as a call makes it), for `launch_planned`; None where a variant signs a
        call otherwise (then only a call through it launches)."""
        plan = self._plan(key, args)
        if plan.other is None:
            return self, plan
        return plan.other.planned(key, args) if plan.signs_alike else None

    def launch_planned(
        self, plan: _Plan, ptrs: list[int], args: tuple[Any, ...], stream: Any
    ) -> None:
        """Launches `plan` (`planned`'s) with this call's tensor pointers, in argument order;
        of `args` only the scalars are read (converted and checked)."""
        if 0 in plan.grid:
            return None
        ctx = driver.current_context(plan.device)
        handle = plan.current_stream() if stream is None else stream_handle(stream)
        scalars = [self._scalar(i, args[i]) for i in plan.scalars]  # checked
        call = (ctx, *ptrs, *[bytes(v) for v in scalars])
        ready = plan.launches.get(call)
        if ready is None:
            self._settled = True
            ready = self._prepare(plan, ctx, ptrs, scalars, handle)
            if len(plan.launches) >= LAUNCH_LIMIT:
                plan.launches.clear()
            if self._settled:  # not one captured whose maps only the graph writes
                plan.launches[call] = ready
        elif ready[2]:  # launched again: it may be captured now, so its maps are held
            self._maps.hold(ctx, ready[2])
            ready[2] = ()
        if self.manifest.stateful:
            self._in_turn(ctx, handle)
        driver.launch(ready[0], plan.grid, plan.block, plan.dynamic_smem, handle, ready[1])
        return None

    def _scalar(self, i: int, value: Any) -> ctypes._SimpleCData:
        """User argument `i`, a scalar, checked and converted (`scalar_value`): once per value
        of a Python float or int, which a planned call looks up (the same eps each call)."""
        if type(value) not in (float, int) or value == 0:  # 0.0 == -0.0, but not in bits
            return scalar_value(self._params[i], value)
        key = (i, type(value), value)
        found = self._scalars.get(key)
        if found is None:
            if len(self._scalars) >= LAUNCH_LIMIT:
                self._scalars.clear()
            found = self._scalars[key] = scalar_value(self._params[i], value)
        return found

    def _in_turn(self, ctx: int, stream: int) -> None:
        """Orders a stateful kernel's launch on `stream` after its last one in `ctx` when that
        went to another stream: two launches of one module must not share its globals at once
        (launches on one stream never overlap). A launch captured into a CUDA graph is not
        ordered (it runs when the graph is replayed) and leaves the last stream as it was."""
        last = self._last_stream.setdefault(ctx, stream)
        if last != stream and driver.order_after(stream, last):
            self._last_stream[ctx] = stream

    def _prepare(
        self, plan: _Plan, ctx: int, ptrs: list[int], scalars: list[Any], handle: int
    ) -> list[Any]:
        """What launches `plan` with these pointers and scalars in context `ctx`: its function
        (the shared memory it may use raised), its packed parameters, tensor maps made, and
        those maps: the first launch again from the ready launches holds them in the map store
        (runtime/maps.py), as a capture would (it may be one; asking costs every launch)."""
        if plan.written:
            check_disjoint(plan.written, {n: ptrs[plan.index[n]] for n, _, _ in plan.written})
        function = self._function(ctx, plan.variant)
        self._allow_smem((ctx, plan.variant), function, plan.dynamic_smem)
        while True:  # again if making a map freed those made before it (MAP_LIMIT)
            flushes, values = self._maps.flushes, iter(scalars)
            params: list[ctypes._SimpleCData] = []
            maps: list[bytes] = []
            for slot in plan.slots:
                if not isinstance(slot, tuple):
                    params.append(slot)
                elif slot[0] == "arg":
                    params.append(ctypes.c_uint64(ptrs[slot[1]]))
                elif slot[0] == "tma":
                    address, data = self._planned_map(ctx, plan, slot[1], ptrs, handle)
                    params.append(ctypes.c_uint64(address))
                    maps.append(data)
                else:
                    params.append(next(values))
            if flushes == self._maps.flushes:
                return [function, driver.Packed(params), tuple(maps)]

    def device_symbols(self, device: int | None) -> dict[str, int]:
        """The device's symbols for a grid formula. In a kernel of clusters, `num_sms` is the
        blocks of the clusters the device holds at once, which can be fewer than its SMs (a
        cluster's blocks share a GPC: on the H200 66 clusters of 2 fit, 132 blocks, but only 30
        of 4, 120 blocks), so that a persistent grid of `num_sms` blocks runs in one wave
        instead of leaving a few clusters for a second one."""
        symbols = _device_symbols(device)
        if self.sms is not None:
            symbols["num_sms"] = min(symbols["num_sms"], self.sms)
        size = self.manifest.cluster
        if size > 1:
            ctx = driver.current_context(device)
            if ctx not in self._cluster_sms:
                self._cluster_sms[ctx] = self._cluster_blocks(ctx, symbols["num_sms"], size)
            symbols["num_sms"] = self._cluster_sms[ctx]
        return symbols

    def _cluster_blocks(self, ctx: int, sms: int, size: int) -> int:
        m = self.manifest
        whole = sms - sms % size
        if not all(isinstance(d, int) for d in (*m.block, m.dynamic_smem)):
            return whole  # a launch shape known only at bind time: SMs in whole clusters
        function = self._function(ctx, "")
        self._allow_smem((ctx, ""), function, m.dynamic_smem)
        block = (m.block[0], m.block[1], m.block[2])
        try:
            count = driver.max_active_clusters(function, block, m.dynamic_smem, size, whole)
        except driver.CudaError:  # a driver without the query: the SMs in whole clusters
            return whole
        return min(whole, count * size) if count > 0 else whole

    def _allow_smem(self, key: tuple[int, str], function: Any, nbytes: int) -> None:
        if nbytes > max(self._max_smem_hint(), self._smem_set.get(key, 0)):
            driver.set_max_dynamic_smem(function, nbytes)
            self._smem_set[key] = nbytes

    def _launch_bound(self, args: tuple[Any, ...], stream: Any) -> None:
        """A launch that binds (and checks) every argument each time: host arrays to stage,
        TMA maps to encode, or arguments `bind` will reject."""
        b = bind(self.manifest, args, self.device_symbols)
        other = self.variant_for(b)
        if other is not None:
            return other._launch_bound(args, stream)
        if 0 in b.grid:
            return  # an empty problem: nothing to launch, nothing to copy back
        device = next((v.device for v in b.views.values() if v.device is not None), None)
        ctx = driver.current_context(device)
        function = self._function(ctx, b.variant)
        self._allow_smem((ctx, b.variant), function, b.dynamic_smem)
        handle = current_stream(*framework_of(b)) if stream is None else stream_handle(stream)
        staged: list[int] = []
        try:
            for view in b.views.values():
                if view.host is not None:
                    view.ptr = driver.to_device(view.host, handle)
                    staged.append(view.ptr)
            params = self._bound_params(ctx, b, handle)
            if self.manifest.stateful:
                self._in_turn(ctx, handle)
            driver.launch(function, b.grid, b.block, b.dynamic_smem, handle, params)
            for name, view in b.views.items():
                if view.host is not None and self._intent(name) != "in":
                    driver.to_host(view.ptr, view.host, handle)
        finally:
            if staged:
                driver.synchronize(handle)
                for ptr in staged:
                    driver.free(ptr)

    def _bound_params(self, ctx: int, b: Binding, handle: int) -> list[ctypes._SimpleCData]:
        while True:  # again if making a map freed those made before it (MAP_LIMIT)
            flushes = self._maps.flushes
            params: list[ctypes._SimpleCData] = []
            for slot in b.slots:
                if isinstance(slot, tuple) and slot[0] == "tensor":
                    params.append(ctypes.c_uint64(b.views[slot[1]].ptr))
                elif isinstance(slot, tuple) and b.tma[slot[1]] is None:
                    params.append(ctypes.c_uint64(0))  # an optional map not made: null
                elif isinstance(slot, tuple):
                    params.append(ctypes.c_uint64(self._tma_pointer(ctx, b, slot[1], handle)))
                else:
                    params.append(slot)
            if flushes == self._maps.flushes:
                return params

    def _intent(self, name: str) -> str:
        return next(t.intent for t in self.manifest.tensors() if t.name == name)

    def _planned_map(
        self, ctx: int, plan: _Plan, name: str, ptrs: list[int], stream: int
    ) -> tuple[int, bytes]:
        """The device copy of tensor map `name` over this call's pointer, and the map: encoded
        once per (context, pointer) for the plan's shapes and strides, then looked up."""
        ptr = ptrs[plan.tma_tensor[name]]
        key = (ctx, name, ptr)
        found = plan.maps.get(key)
        if found is None:
            data = driver.encode_tma_tiled(plan.tma[name], ptr)
            found = (self._map_buffer(ctx, data, stream), data)
            if self._settled:
                plan.maps[key] = found
        return found

    def _map_buffer(self, ctx: int, data: bytes, stream: int) -> int:
        """The device copy of the tensor map `data` (runtime/maps.py). Where the store reused
        the slots of older maps, the plans' launches that passed them are dropped."""
        flushes = self._maps.flushes
        address, written = self._maps.address(ctx, data, stream)
        self._settled = self._settled and written
        if self._maps.flushes != flushes:
            for plan in self._plans.values():
                plan.maps.clear()
                plan.launches.clear()  # they pass the maps of the slots reused
        return address

    def _tma_pointer(self, ctx: int, b: Binding, descriptor: str, stream: int) -> int:
        spec = next(d for d in self.manifest.tma if d.name == descriptor)
        data = driver.encode_tma_tiled(b.tma[descriptor], b.views[spec.tensor].ptr)
        return self._map_buffer(ctx, data, stream)


def _device_symbols(device: int | None) -> dict[str, int]:
    return {"num_sms": driver.sm_count(device)}


def load(path: str | os.PathLike[str]) -> Kernel:
    """The kernel in the bundle directory at `path` (the GPU is touched at the first launch)."""
    manifest, ptx = read_bundle(path)
    others = tuple(load(Path(path) / ref.bundle) for ref in manifest.variants)
    wide, special = read_wide_ptx(path, manifest), read_special_ptx(path, manifest)
    return Kernel(manifest, ptx, wide, special, others)
