//! ibv_devinfo and ibv_devices (ibverbs-utils), unmodified, list `iwarp0`
//! over the shim as an iWARP device with an active port.

mod common;

use std::time::Duration;

use common::{over_shim, show, tool, Reaped};

#[test]
fn ibv_devinfo_lists_iwarp0_as_an_iwarp_device() {
    let Some(devinfo) = tool("ibv_devinfo", "ibverbs-utils") else {
        return;
    };
    let mut cmd = over_shim(&devinfo);
    cmd.arg("-v");
    let (status, out) = Reaped::spawn(cmd).finish(Duration::from_secs(30));
    let report = show("ibv_devinfo", status, &out);
    assert!(status.is_some_and(|s| s.success()), "{report}");
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "hca_id:\tiwarp0",
        "transport:\t\t\tiWARP (1)",
        "PORT_ACTIVE",
        "phys_port_cnt:\t\t\t1",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{report}");
    }
}

#[test]
fn ibv_devices_lists_iwarp0() {
    let Some(devices) = tool("ibv_devices", "ibverbs-utils") else {
        return;
    };
    let (status, out) = Reaped::spawn(over_shim(&devices)).finish(Duration::from_secs(30));
    let report = show("ibv_devices", status, &out);
    assert!(status.is_some_and(|s| s.success()), "{report}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("iwarp0"),
        "{report}"
    );
}
