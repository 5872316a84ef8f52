package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A test double of {@link Verbs}: devices and ports as a test describes them. It exercises the
 * probe's logic only; it is not a device and proves nothing about {@link FfmVerbs}.
 */
final class FakeVerbs implements Verbs {

    record FakeDevice(DeviceAttributes attributes, List<PortAttributes> ports, Map<String, byte[]> gids, Integer openErrno) {
    }

    private final Map<String, FakeDevice> devices = new LinkedHashMap<>();
    private Integer listErrno;
    final List<String> closed = new ArrayList<>();

    FakeVerbs failList(int errno) {
        listErrno = errno;
        return this;
    }

    FakeVerbs device(String name, FakeDevice device) {
        devices.put(name, device);
        return this;
    }

    static DeviceAttributes attributes(int ports) {
        return new DeviceAttributes("1.2.3", 0x0002c90300a0b0c0L, 0x2c9, 4119, 262144, 4194303, -1L, VerbsAbi.IBV_ATOMIC_HCA, ports, 16, 8);
    }

    static PortAttributes port(int state, int linkLayer) {
        return new PortAttributes(state, VerbsAbi.IBV_MTU_4096, VerbsAbi.IBV_MTU_1024, 2, 7, 5, linkLayer, 1L << 30);
    }

    @Override
    public String library() {
        return "fake";
    }

    @Override
    public List<String> deviceNames() {
        if (listErrno != null) {
            throw new ErrnoException("ibv_get_device_list", listErrno, "fake", "&num_devices", FfmVerbs.hintForDeviceList(listErrno));
        }
        return List.copyOf(devices.keySet());
    }

    @Override
    public Device open(String name) {
        FakeDevice d = devices.get(name);
        if (d == null) {
            throw new IllegalArgumentException("no RDMA device named '" + name + "'");
        }
        if (d.openErrno() != null) {
            throw new ErrnoException("ibv_open_device", d.openErrno(), name, name, "check the permissions of /dev/infiniband/uverbs*");
        }
        return new Device() {
            @Override
            public DeviceAttributes attributes() {
                return d.attributes();
            }

            @Override
            public PortAttributes port(int port) {
                return d.ports().get(port - 1);
            }

            @Override
            public byte[] gid(int port, int index) {
                byte[] gid = d.gids().get(port + "/" + index);
                if (gid == null) {
                    throw new ErrnoException("ibv_query_gid", Errno.EINVAL, name, name + ", " + port + ", " + index + ", &gid");
                }
                return gid;
            }

            @Override
            public ProtectionDomain allocateProtectionDomain() {
                throw new UnsupportedOperationException("FakeVerbs describes devices for the probe; LoopbackVerbs simulates a data path");
            }

            @Override
            public CompletionChannel createCompletionChannel() {
                throw new UnsupportedOperationException("FakeVerbs describes devices for the probe; LoopbackVerbs simulates a data path");
            }

            @Override
            public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel) {
                throw new UnsupportedOperationException("FakeVerbs describes devices for the probe; LoopbackVerbs simulates a data path");
            }

            @Override
            public AsyncEvent takeAsyncEvent() {
                return null;
            }

            @Override
            public void close() {
                closed.add(name);
            }
        };
    }
}
