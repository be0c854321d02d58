#!/bin/sh
# Simulated Huawei Ascend installer (kunpeng_ascend.vllm tests): tests/simulator/fake-installer.sh, which
# tests/simulator/build_packages.py ships as install.sh in every package, beside the package.conf it writes.
# NOT Huawei's installer: it builds no kernel module and flashes no firmware. It checks what the real one checks
# and leaves behind the files the real one leaves (version.info, /etc/ascend_install.info, set_env.sh, npu-smi,
# ...), printing lines in the real format, so that automation can be tested without an NPU.
#
# Environment:
#   ASCEND_SIM_ROOT       prefix of every host path (default empty = the real root). When it is set (and not "/"),
#                         the user/group checks read $ASCEND_SIM_ROOT/etc/passwd and $ASCEND_SIM_ROOT/etc/group
#                         instead of the system database (getent), and root is not required. Paths written
#                         INTO files (set_env.sh, install.info, ...) are the paths as seen on the target system,
#                         i.e. without the prefix; symlinks point at the prefixed path so that they resolve.
#   ASCEND_SIM_KERNEL     kernel release whose headers the driver looks for (default: uname -r)
#   ASCEND_SIM_ARCH       machine architecture the package is checked against (default: uname -m)
#   ASCEND_SIM_NPU_COUNT  chips the firmware says it upgraded (default 8)
#   ASCEND_SIM_DRIVER_REBOOT=1  a first driver install also says a reboot is needed
umask 022
LC_ALL=C
export LC_ALL

PKG_DIR=$(cd "$(dirname "$0")" && pwd)
# package.conf is generated per package (COMPONENT, PKG_NAME, PKG_FILE, VERSION, PKG_ARCH, CHIP and version data).
# shellcheck source=/dev/null
. "$PKG_DIR/package.conf"

R=${ASCEND_SIM_ROOT:-}
R=${R%/}
case "$R" in
    ''|/*) ;;
    *) R=${USER_PWD:-$PWD}/$R;;  # relative to where the .run was started (makeself exports USER_PWD)
esac
DEFAULT_PATH=/usr/local/Ascend
INFO_L=/etc/ascend_install.info
INFO_F=$R$INFO_L
CANN_INFO_L=/etc/Ascend/ascend_cann_install.info
CANN_INFO_F=$R$CANN_INFO_L
LOG_DIR_L=/var/log/ascend_seclog
LOG_DIR=$R$LOG_DIR_L
LOG_FILE=$LOG_DIR/ascend_install.log
OP_LOG=$LOG_DIR/operation.log
EXTRA_LOG=

case "$COMPONENT" in
    driver) TAG='[Driver]'; TSFMT='%Y-%m-%d %H:%M:%S'; SEP='';;
    firmware) TAG='[Firmware]'; TSFMT='%Y-%m-%d %H:%M:%S'; SEP='';;
    toolkit) TAG='[Toolkit]'; TSFMT='%Y%m%d-%H:%M:%S'; SEP=' '; EXTRA_LOG=$LOG_DIR/ascend_toolkit_install.log;;
    kernels) TAG='[Kernels]'; TSFMT='%Y%m%d-%H:%M:%S'; SEP=' ';;
    nnal) TAG='[NNAL]'; TSFMT='%Y%m%d-%H:%M:%S'; SEP=' ';;
    docker-runtime) TAG='[Ascend-Docker-Runtime]'; TSFMT='%Y-%m-%d %H:%M:%S'; SEP=' ';;
    *) echo "[ERROR] unknown component $COMPONENT in package.conf"; exit 1;;
esac

now() { date "+$TSFMT"; }

log() {
    mkdir -p "$LOG_DIR" 2>/dev/null && chmod 750 "$LOG_DIR" 2>/dev/null
    _line=$(printf '%s [%s] [%s]%s%s' "$TAG" "$(now)" "$1" "$SEP" "$2")
    printf '%s\n' "$_line" >>"$LOG_FILE" 2>/dev/null
    if [ -n "$EXTRA_LOG" ]; then printf '%s\n' "$_line" >>"$EXTRA_LOG" 2>/dev/null; fi
    return 0
}

say() {
    if [ "$COMPONENT" = docker-runtime ]; then
        printf '[%s] %s\n' "$1" "$2"
    else
        printf '%s [%s] [%s]%s%s\n' "$TAG" "$(now)" "$1" "$SEP" "$2"
    fi
    log "$1" "$2"
}

# shellcheck disable=SC2153 # PKG_FILE is set by package.conf, not misspelt
oplog() {
    mkdir -p "$LOG_DIR" 2>/dev/null
    printf '%s %s %s %s %s; %s\n' "$OPERATION" "$START_TIME" "$(id -un 2>/dev/null || echo unknown)" "$1" \
        "$PKG_FILE" "$ALL_ARGS" >>"$OP_LOG" 2>/dev/null
    return 0
}

die() {
    say ERROR "$1"
    oplog Failed
    exit 1
}

usage() {
    echo "Usage: ./$PKG_FILE [options]"
    case "$COMPONENT" in
        driver|firmware) echo "  --full | --upgrade | --uninstall | --check | --version";;
        docker-runtime) echo "  --install | --upgrade | --uninstall [--install-scene=docker|containerd|crio|isula] [--injection-mode=cdi|legacy]";;
        *) echo "  --install | --full | --upgrade | --uninstall | --version";;
    esac
    echo "  --quiet  --install-for-all  --install-path=<path>  --install-username=<user>  --install-usergroup=<group>"
}

# ---------------------------------------------------------------- arguments
ACTION=
QUIET=n
FOR_ALL=n
INSTALL_PATH=
USERNAME=
USERGROUP=
INPUT_USER=
INPUT_GROUP=
OPERATION=Check
SCENE=
INJECTION=
ALL_ARGS="$*"
START_TIME=$(date '+%Y-%m-%d %H:%M:%S')

set_action() {
    if [ -n "$ACTION" ] && [ "$ACTION" != "$1" ]; then
        die "ERR_NO:0x0004;ERR_DES:Only one of --full, --install, --upgrade, --uninstall, --check can be given"
    fi
    ACTION=$1
}

for arg in "$@"; do
    case "$arg" in
        --full) set_action full;;
        --install) set_action install;;
        --upgrade) set_action upgrade;;
        --uninstall) set_action uninstall;;
        --check) set_action check;;
        --version) set_action version;;
        -h|--help) usage; exit 0;;
        --quiet) QUIET=y;;
        --nox11|--pylocal|--noexec-cleanup) ;;
        --install-for-all) FOR_ALL=y;;
        --install-path=*) INSTALL_PATH=${arg#*=};;
        --install-username=*) USERNAME=${arg#*=}; INPUT_USER=y;;
        --install-usergroup=*) USERGROUP=${arg#*=}; INPUT_GROUP=y;;
        --install-scene=*) SCENE=${arg#*=};;
        --injection-mode=*) INJECTION=${arg#*=};;
        --install-type=*) ;;
        *) die "ERR_NO:0x0004;ERR_DES:Unrecognized parameters: $arg. Try './$PKG_FILE --help' for more information.";;
    esac
done
[ "$ACTION" = install ] && [ "$COMPONENT" = driver ] && ACTION=full
[ "$ACTION" = install ] && [ "$COMPONENT" = firmware ] && ACTION=full
[ "$ACTION" = full ] && [ "$COMPONENT" = docker-runtime ] && ACTION=install
case "$ACTION" in
    full|install) OPERATION=Install;;
    upgrade) OPERATION=Upgrade;;
    uninstall) OPERATION=Uninstall;;
    *) OPERATION=Check;;
esac
if [ "$ACTION" = version ]; then
    echo "$VERSION"
    exit 0
fi
if [ -z "$ACTION" ]; then
    die "ERR_NO:0x0004;ERR_DES:No operation given, use one of: $(usage | sed -n 2p | sed 's/^ *//')"
fi

# ---------------------------------------------------------------- helpers
need_root() {
    [ -n "$R" ] && return 0
    [ "$(id -u)" = 0 ] || die "ERR_NO:0x0093;ERR_DES:Permission denied, please run the installation as root"
}

check_arch() {
    _cur=${ASCEND_SIM_ARCH:-$(uname -m)}
    [ "$_cur" = "$PKG_ARCH" ] || die "Arch mismatch, src package is $PKG_ARCH_NAME, cur os is $_cur"
}

kernel_release() { echo "${ASCEND_SIM_KERNEL:-$(uname -r)}"; }

check_path() {
    case "$1" in
        /*) ;;
        *) die "ERR_NO:0x0003;ERR_DES:install-path input error ($1 is not an absolute path), install failed";;
    esac
    case "$1" in
        *[!A-Za-z0-9._/-]*) die "ERR_NO:0x0003;ERR_DES:The install-path [$1] is invalid, only characters in [a-z,A-Z,0-9,-,_,.,/] are supported.";;
    esac
}

# info_get KEY FILE
info_get() {
    [ -f "$2" ] || return 0
    sed -n "s/^$1=//p" "$2" | tail -n 1
}

# info_set KEY VALUE FILE: replace the KEY line in place, or append it; other lines are kept as they are
info_set() {
    mkdir -p "$(dirname "$3")"
    [ -f "$3" ] || : >"$3"
    awk -v k="$1" -v v="$2" 'index($0, k "=") == 1 { if (!done) print k "=" v; done = 1; next }
        { print } END { if (!done) print k "=" v }' "$3" >"$3.tmp" && mv "$3.tmp" "$3"
    chmod 644 "$3"
}

# info_del_prefix PREFIX FILE: drop the lines whose key starts with PREFIX
info_del_prefix() {
    [ -f "$2" ] || return 0
    awk -v p="$1" 'index($0, p) != 1' "$2" >"$2.tmp" && mv "$2.tmp" "$2"
}

user_exists() {
    if [ -n "$R" ]; then
        awk -F: -v u="$1" '$1 == u { f = 1 } END { exit !f }' "$R/etc/passwd" 2>/dev/null
    else
        getent passwd "$1" >/dev/null 2>&1
    fi
}

group_exists() {
    if [ -n "$R" ]; then
        awk -F: -v g="$1" '$1 == g { f = 1 } END { exit !f }' "$R/etc/group" 2>/dev/null
    else
        getent group "$1" >/dev/null 2>&1
    fi
}

# user_in_group USER GROUP: primary group or listed member
user_in_group() {
    if [ -n "$R" ]; then
        _gid=$(awk -F: -v g="$2" '$1 == g { print $3 }' "$R/etc/group" 2>/dev/null)
        _ugid=$(awk -F: -v u="$1" '$1 == u { print $4 }' "$R/etc/passwd" 2>/dev/null)
        [ -n "$_gid" ] && [ "$_gid" = "$_ugid" ] && return 0
        awk -F: -v g="$2" -v u="$1" '$1 == g { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) f = 1 }
            END { exit !f }' "$R/etc/group" 2>/dev/null
    else
        id -Gn "$1" 2>/dev/null | tr ' ' '\n' | grep -qx "$2"
    fi
}

# keep_script DIR LOGICAL_PATH: leave a copy of this installer and an uninstall.sh, like the real packages
keep_script() {
    mkdir -p "$1"
    cp "$PKG_DIR/install.sh" "$1/install.sh"
    cp "$PKG_DIR/package.conf" "$1/package.conf"
    cat >"$1/uninstall.sh" <<EOF
#!/bin/sh
# Uninstalls the simulated $PKG_NAME $VERSION (the same as running $PKG_FILE --uninstall).
exec sh "\$(dirname "\$0")/install.sh" --uninstall --install-path=$2 "\$@"
EOF
    chmod 755 "$1/install.sh" "$1/uninstall.sh"
    chmod 644 "$1/package.conf"
}

dummy_file() {
    mkdir -p "$(dirname "$1")"
    printf 'simulated %s from the fake %s %s package (no real code)\n' "$(basename "$1")" "$PKG_NAME" "$VERSION" >"$1"
}

banner() {
    say INFO "Start time: $START_TIME"
    say INFO "LogFile: $LOG_DIR_L/ascend_install.log"
    say INFO "OperationLogFile: $LOG_DIR_L/operation.log"
}

finish() {
    say INFO "End time: $(date '+%Y-%m-%d %H:%M:%S')"
}

# ---------------------------------------------------------------- driver
driver_files() {
    _d=$HP/driver
    mkdir -p "$_d/tools" "$_d/lib64/driver" "$_d/lib64/common" "$_d/kernel" "$_d/script"
    cp "$PKG_DIR/files/ascend-sim" "$_d/tools/ascend-sim"
    chmod 755 "$_d/tools/ascend-sim"
    ln -sfn ascend-sim "$_d/tools/hccn_tool"
    mkdir -p "$R/usr/local/bin"
    rm -f "$R/usr/local/bin/npu-smi"
    ln -s "$_d/tools/ascend-sim" "$R/usr/local/bin/npu-smi"
    for _l in libascend_hal.so libdrvdsmi_host.so libdcmi.so libc_sec.so libmmpa.so; do
        dummy_file "$_d/lib64/driver/$_l"
        ln -sfn "driver/$_l" "$_d/lib64/$_l"
    done
    dummy_file "$_d/lib64/common/libstackcore.so"
    dummy_file "$_d/kernel/drv_davinci_host.ko"
    mkdir -p "$R/usr/local/dcmi"
    dummy_file "$R/usr/local/dcmi/dcmi_interface_api.h"
    dummy_file "$R/usr/local/dcmi/libdcmi.so"
    cat >"$_d/version.info" <<EOF
Version=$VERSION
ascendhal_version=$DRV_ASCENDHAL_VERSION
aicpu_version=1.0
tdt_version=1.0
log_version=1.0
prof_version=2.0
dvppkernels_version=1.1
tsfw_version=1.0
Innerversion=$DRV_INNERVERSION
compatible_version=$DRV_COMPATIBLE_VERSION
compatible_version_fw=$DRV_COMPATIBLE_VERSION_FW
package_version=$VERSION
EOF
    chmod 444 "$_d/version.info"
    keep_script "$_d/script" "$IP"
}

driver_remove_files() {
    rm -rf "$HP/driver"
    if [ -L "$R/usr/local/bin/npu-smi" ]; then rm -f "$R/usr/local/bin/npu-smi"; fi
    rm -rf "$R/usr/local/dcmi"
}

driver_uninstall() {
    banner
    IP=${INSTALL_PATH:-$(info_get Driver_Install_Path_Param "$INFO_F")}
    IP=${IP:-$DEFAULT_PATH}
    check_path "$IP"
    HP=$R$IP
    [ -f "$HP/driver/version.info" ] || die "ERR_NO:0x0080;ERR_DES:The driver package is not installed in $IP, uninstall failed."
    driver_remove_files
    info_del_prefix Driver_ "$INFO_F"
    if [ -f "$INFO_F" ] && ! grep -q '^Firmware_' "$INFO_F"; then rm -f "$INFO_F"; fi
    say INFO "Driver package uninstalled successfully! Reboot needed for uninstallation to take effect!"
    finish
    oplog Success
}

driver_main() {
    need_root
    if [ "$ACTION" = uninstall ]; then driver_uninstall; return; fi
    if [ "$ACTION" = check ]; then banner; finish; oplog Success; return; fi
    banner
    say WARNING "Do not power off or restart the system during the installation/upgrade"
    check_arch
    IP=${INSTALL_PATH:-$(info_get Driver_Install_Path_Param "$INFO_F")}
    IP=${IP:-$DEFAULT_PATH}
    check_path "$IP"
    HP=$R$IP
    _old=$(info_get Version "$HP/driver/version.info")
    if [ "$ACTION" = full ] && [ -f "$HP/driver/version.info" ]; then
        die "ERR_NO:0x0080;ERR_DES:The driver package (version $_old) has already been installed in $IP, the version of this package is $VERSION. Please use --upgrade to upgrade it, or uninstall it first."
    fi
    if [ "$ACTION" = upgrade ] && [ ! -f "$HP/driver/version.info" ]; then
        die "ERR_NO:0x0080;ERR_DES:The driver package is not installed in $IP, --upgrade is not supported. Please use --full to install it."
    fi

    if [ -n "$INPUT_USER$INPUT_GROUP" ]; then
        [ -n "$USERNAME" ] || die "ERR_NO:0x0091;ERR_DES:input_install_username is empty"
        [ -n "$USERGROUP" ] || die "ERR_NO:0x0091;ERR_DES:input_install_group is empty"
    else
        USERNAME=$(info_get UserName "$INFO_F")
        USERGROUP=$(info_get UserGroup "$INFO_F")
        USERNAME=${USERNAME:-HwHiAiUser}
        USERGROUP=${USERGROUP:-HwHiAiUser}
    fi
    if [ "$USERNAME" = root ] && [ "$FOR_ALL" = n ] && [ "$ACTION" = full ]; then
        die "ERR_NO:0x0091;ERR_DES:username not permission for root"
    fi
    user_exists "$USERNAME" || die "ERR_NO:0x0091;ERR_DES:$USERNAME not exists! Please add $USERNAME"
    group_exists "$USERGROUP" || die "ERR_NO:0x0091;ERR_DES:$USERGROUP group not exists! Please add $USERGROUP group"
    user_in_group "$USERNAME" "$USERGROUP" || die "ERR_NO:0x0096;ERR_DES:$USERGROUP not right! Please check the relationship of $USERNAME and $USERGROUP"
    say INFO "set username and usergroup, $USERNAME:$USERGROUP"

    command -v dkms >/dev/null 2>&1 || die "The list of missing tools: dkms, (the driver builds its kernel modules with DKMS: install dkms, gcc, make and the kernel headers of the running kernel first)"
    _k=$(kernel_release)
    if [ ! -d "$R/lib/modules/$_k/build" ] && [ ! -d "$R/usr/src/linux-headers-$_k" ]; then
        die "ERR_NO:0x0086;ERR_DES:The kernel headers of the running kernel $_k are not installed (neither /lib/modules/$_k/build nor /usr/src/linux-headers-$_k exists). Please install linux-headers-$_k (kernel-devel and kernel-headers on openEuler) and retry."
    fi
    say INFO "driver install type: DKMS"
    say INFO "upgradePercentage:10%"
    [ "$ACTION" = upgrade ] && driver_remove_files
    say INFO "upgradePercentage:30%"
    driver_files
    if [ "$FOR_ALL" = y ]; then _all=yes
    elif [ "$ACTION" = upgrade ] && [ "$(info_get Driver_Install_For_All "$INFO_F")" = yes ]; then _all=yes
    else _all=no; fi
    info_set UserName "$USERNAME" "$INFO_F"
    info_set UserGroup "$USERGROUP" "$INFO_F"
    info_set Driver_Install_Type full "$INFO_F"
    info_set Driver_Install_Path_Param "$IP" "$INFO_F"
    info_set Driver_Install_For_All "$_all" "$INFO_F"
    info_set Driver_Install_Mode normal "$INFO_F"
    info_set Driver_Install_Status complete "$INFO_F"
    say INFO "upgradePercentage:40%"
    say INFO "upgradePercentage:90%"
    if [ "$ACTION" = full ]; then
        say INFO "Waiting for device startup..."
        say INFO "Device startup success"
    fi
    say INFO "upgradePercentage:100%"
    if [ "$ACTION" = upgrade ]; then
        say INFO "Driver package upgraded successfully! Reboot needed for installation/upgrade to take effect!"
    elif [ "${ASCEND_SIM_DRIVER_REBOOT:-0}" = 1 ]; then
        say INFO "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
    else
        say INFO "Driver package installed successfully! The new version takes effect immediately. "
    fi
    finish
    oplog Success
}

# ---------------------------------------------------------------- firmware
firmware_main() {
    need_root
    banner
    if [ "$ACTION" = check ]; then finish; oplog Success; return; fi
    IP=${INSTALL_PATH:-$(info_get Firmware_Install_Path_Param "$INFO_F")}
    IP=${IP:-$(info_get Driver_Install_Path_Param "$INFO_F")}
    IP=${IP:-$DEFAULT_PATH}
    check_path "$IP"
    HP=$R$IP
    if [ "$ACTION" = uninstall ]; then
        [ -f "$HP/firmware/version.info" ] || die "ERR_NO:0x0080;ERR_DES:The firmware package is not installed in $IP, uninstall failed."
        rm -rf "$HP/firmware"
        info_del_prefix Firmware_ "$INFO_F"
        if [ -f "$INFO_F" ] && ! grep -q '^Driver_' "$INFO_F"; then rm -f "$INFO_F"; fi
        say INFO "Firmware package uninstalled successfully! Reboot needed for uninstallation to take effect!"
        finish
        oplog Success
        return
    fi
    say WARNING "Do not power off or restart the system during the installation/upgrade"
    _dp=$(info_get Driver_Install_Path_Param "$INFO_F")
    _dp=${_dp:-$IP}
    [ -f "$R$_dp/driver/version.info" ] || die "ERR_NO:0x0080;ERR_DES:The driver is not installed, the firmware can not be upgraded. Please install the driver package first."
    say INFO "upgradePercentage: 4%"
    rm -rf "$HP/firmware"
    mkdir -p "$HP/firmware"
    cat >"$HP/firmware/version.info" <<EOF
Version=$VERSION
firmware_version=1.0
package_version=$FW_PACKAGE_VERSION
compatible_version_drv=$FW_COMPATIBLE_VERSION_DRV
EOF
    chmod 444 "$HP/firmware/version.info"
    say INFO "upgradePercentage: 51%"
    keep_script "$HP/firmware/script" "$IP"
    info_set Firmware_Install_Type full "$INFO_F"
    info_set Firmware_Install_Path_Param "$IP" "$INFO_F"
    say INFO "upgradePercentage: 86%"
    say INFO "upgradePercentage: 100%"
    say INFO "The firmware of [${ASCEND_SIM_NPU_COUNT:-8}] chips are successfully upgraded."
    if [ "$ACTION" = upgrade ]; then
        say INFO "Firmware package upgraded successfully! Reboot now or after driver installation for the installation/upgrade to take effect."
    else
        say INFO "Firmware package installed successfully! Reboot now or after driver installation for the installation/upgrade to take effect."
    fi
    finish
    oplog Success
}

# ---------------------------------------------------------------- CANN toolkit
cann_path() {
    IP=${INSTALL_PATH:-$(info_get Install_Path "$CANN_INFO_F")}
    IP=${IP:-$DEFAULT_PATH}
    check_path "$IP"
    HP=$R$IP
}

eula() {
    echo "Please read the End User License Agreement (EULA) of $1 (simulated package): https://www.hiascend.com/software/protocol"
    while :; do
        printf 'Do you accept the EULA to install %s?[y/n]' "$1"
        if ! read -r _ans; then
            echo
            die "The EULA is not accepted (no answer), the installation is cancelled."
        fi
        case "$_ans" in
            y|Y) return 0;;
            n|N) die "The EULA is not accepted, the installation is cancelled.";;
        esac
    done
}

need_python() {
    command -v python3 >/dev/null 2>&1 || die "There is no python3.7,python3.8,python3.9,python3.10,python3.11 in the current environment !"
}

# version_dirs DIR: the names in DIR but the latest link and set_env.sh (its versions), one a line, sorted
version_dirs() {
    for _vd in "$1"/*; do
        [ -e "$_vd" ] || [ -L "$_vd" ] || continue  # the unmatched pattern of an empty or missing DIR
        case "${_vd##*/}" in
            latest|set_env.sh) ;;
            *) printf '%s\n' "${_vd##*/}";;
        esac
    done
}

# latest_fix DIR: point DIR/latest at the newest remaining version, or remove it
latest_fix() {
    _lf_newest=$(version_dirs "$1" | sort -V | tail -n 1)
    rm -f "$1/latest"
    if [ -n "$_lf_newest" ]; then ln -s "$_lf_newest" "$1/latest"; fi
    [ -n "$_lf_newest" ]
}

toolkit_files() {
    _t=$HP/ascend-toolkit
    _v=$_t/$VERSION
    _a=$_v/$PKG_ARCH-linux
    mkdir -p "$_a/lib64" "$_a/include" "$_a/bin" "$_v/python/site-packages" "$_v/opp/built-in/op_impl/ai_core/tbe" \
        "$_v/compiler/ccec_compiler/bin" "$_v/tools/ccec_compiler/bin" "$_v/toolkit" "$_v/bin"
    for _l in libascendcl.so libhccl.so libge_runner.so libruntime.so; do
        dummy_file "$_a/lib64/$_l"
    done
    ln -sfn "$PKG_ARCH-linux/lib64" "$_v/lib64"
    ln -sfn "$PKG_ARCH-linux/include" "$_v/include"
    cat >"$_a/ascend_toolkit_install.info" <<EOF
package_name=Ascend-cann-toolkit
version=$VERSION
innerversion=$CANN_INNERVERSION
compatible_version=$CANN_COMPATIBLE_VERSION
arch=$PKG_ARCH
os=linux
path=$IP/ascend-toolkit/$VERSION/$PKG_ARCH-linux
EOF
    {
        echo "# version: 1.0"
        for _kind in running upgrade installed; do
            for _c in runtime compiler hccl opp toolkit aoe ncs; do
                echo "${_c}_${_kind}_version=[$CANN_INNER_DOTTED:$VERSION]"
            done
        done
    } >"$_v/version.cfg"
    keep_script "$_a/script" "$IP"
    rm -f "$_t/latest"
    ln -s "$VERSION" "$_t/latest"
    cat >"$_t/set_env.sh" <<EOF
export ASCEND_TOOLKIT_HOME=$IP/ascend-toolkit/latest
export LD_LIBRARY_PATH=\${ASCEND_TOOLKIT_HOME}/lib64:\${ASCEND_TOOLKIT_HOME}/lib64/plugin/opskernel:\${ASCEND_TOOLKIT_HOME}/lib64/plugin/nnengine:\${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/\$(arch):\$LD_LIBRARY_PATH
export LD_LIBRARY_PATH=\${ASCEND_TOOLKIT_HOME}/tools/aml/lib64:\${ASCEND_TOOLKIT_HOME}/tools/aml/lib64/plugin:\$LD_LIBRARY_PATH
export PYTHONPATH=\${ASCEND_TOOLKIT_HOME}/python/site-packages:\${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe:\$PYTHONPATH
export PATH=\${ASCEND_TOOLKIT_HOME}/bin:\${ASCEND_TOOLKIT_HOME}/compiler/ccec_compiler/bin:\${ASCEND_TOOLKIT_HOME}/tools/ccec_compiler/bin:\$PATH
export ASCEND_AICPU_PATH=\${ASCEND_TOOLKIT_HOME}
export ASCEND_OPP_PATH=\${ASCEND_TOOLKIT_HOME}/opp
export TOOLCHAIN_HOME=\${ASCEND_TOOLKIT_HOME}/toolkit
export ASCEND_HOME_PATH=\${ASCEND_TOOLKIT_HOME}
EOF
    chmod 755 "$_t/set_env.sh"
    info_set Install_Path "$IP" "$CANN_INFO_F"
}

toolkit_main() {
    need_root
    check_arch
    if [ "$ACTION" = uninstall ]; then
        cann_path
        _t=$HP/ascend-toolkit
        [ -f "$_t/$VERSION/$PKG_ARCH-linux/ascend_toolkit_install.info" ] || die "Ascend-cann-toolkit $VERSION is not installed in $IP/ascend-toolkit, uninstall failed."
        say INFO "uninstall start"
        rm -rf "${_t:?}/$VERSION"
        if ! latest_fix "$_t"; then
            rm -f "${_t:?}/set_env.sh"
            rmdir "$_t" 2>/dev/null
            rm -f "$CANN_INFO_F"
            rmdir "$(dirname "$CANN_INFO_F")" 2>/dev/null
        fi
        say INFO "Ascend-cann-toolkit_${VERSION}_linux-$PKG_ARCH_NAME uninstall success"
        oplog Success
        return
    fi
    [ "$ACTION" = check ] && return 0
    [ "$QUIET" = y ] || eula CANN-Toolkit
    say INFO "LogFile:$LOG_DIR_L/ascend_toolkit_install.log"
    if [ "$ACTION" = upgrade ]; then say INFO "upgrade start"; else say INFO "install start"; fi
    need_python
    cann_path
    say INFO "The installation path is $IP."
    _t=$HP/ascend-toolkit
    if [ "$ACTION" = upgrade ]; then
        _old=$(version_dirs "$_t")
        [ -n "$_old" ] || die "Ascend-cann-toolkit is not installed in $IP, --upgrade is not supported. Please use --install."
        for _o in $_old; do
            [ "$_o" = "$VERSION" ] || rm -rf "${_t:?}/$_o"
        done
    fi
    if [ "$FOR_ALL" = y ]; then _fa=' --install-for-all'; else _fa=''; fi
    for _c in runtime compiler opp toolkit aoe ncs; do
        _p="CANN-$_c-$CANN_INNER_DOTTED-linux.$PKG_ARCH.run"
        say INFO "install package $_p start"
        say INFO "$_p --full --quiet --nox11$_fa install success"
    done
    toolkit_files
    if [ -n "$(info_get Driver_Install_Path_Param "$INFO_F")" ]; then
        _drv="Installed in $(info_get Driver_Install_Path_Param "$INFO_F")/driver."
    else
        _drv="Not installed."
    fi
    _w=install
    [ "$ACTION" = upgrade ] && _w=upgrade
    cat <<EOF


===========
= Summary =
===========

Driver:   $_drv
Toolkit:  Ascend-cann-toolkit_${VERSION}_linux-$PKG_ARCH_NAME $_w success, installed in $IP.

Please make sure that the environment variables have been configured.
-  To take effect for all users, you can add "source $IP/ascend-toolkit/set_env.sh" to /etc/profile.
-  To take effect for current user, you can exec command below: source $IP/ascend-toolkit/set_env.sh or add "source $IP/ascend-toolkit/set_env.sh" to ~/.bashrc.
EOF
    log INFO "Ascend-cann-toolkit_${VERSION}_linux-$PKG_ARCH_NAME $_w success, installed in $IP."
    oplog Success
}

# ---------------------------------------------------------------- CANN kernels (ops)
kernels_main() {
    need_root
    check_arch
    cann_path
    _v=$HP/ascend-toolkit/$VERSION
    _k=$_v/opp/built-in/op_impl/ai_core/tbe/kernel/ascend$CHIP
    if [ "$ACTION" = uninstall ]; then
        [ -f "$_k/version.info" ] || die "Ascend-cann-kernels-$CHIP $VERSION is not installed in $IP/ascend-toolkit/$VERSION, uninstall failed."
        rm -rf "$_k"
        # The opp_kernel record is the toolkit's, not a SoC's: it goes with the last SoC's kernels.
        for _soc in "${_k%/*}"/ascend*; do
            [ -d "$_soc" ] || rm -rf "$_v/opp_kernel"
            break
        done
        if [ -f "$_v/version.cfg" ]; then
            grep -v '^opp_kernel_' "$_v/version.cfg" >"$_v/version.cfg.tmp"
            mv "$_v/version.cfg.tmp" "$_v/version.cfg"
        fi
        say INFO "Ascend-cann-kernels-${CHIP}_${VERSION} uninstall success"
        oplog Success
        return
    fi
    [ "$ACTION" = check ] && return 0
    say INFO "LogFile:$LOG_DIR_L/ascend_install.log"
    say INFO "install start"
    [ -f "$_v/$PKG_ARCH-linux/ascend_toolkit_install.info" ] || die "Can not find Ascend-cann-toolkit $VERSION in $IP/ascend-toolkit, please install the toolkit of the same version first."
    say INFO "The installation path is $IP."
    mkdir -p "$_k"
    cat >"$_k/version.info" <<EOF
Version=$VERSION
version_dir=$VERSION
innerversion=$CANN_INNERVERSION
soc=ascend$CHIP
EOF
    if [ -n "${OPS_BUILD:-}" ]; then
        # CANN 8.2 and later also leave the toolkit-wide record real hosts have (Version= the ops build,
        # version_dir= the CANN release); ascend_facts reads it before the per-SoC file above.
        mkdir -p "$_v/opp_kernel"
        {
            printf 'Version=%s\nversion_dir=%s\ntimestamp=%s\nops_version=%s\nadk_version=%s\n' \
                "$OPS_BUILD" "$VERSION" "$OPS_TIMESTAMP" "$OPS_BUILD" "$OPS_BUILD"
            for _p in amct_acl aoe compiler fwkplugin hccl nca ncs opp runtime toolkit; do
                printf 'required_package_%s_version="%s"\n' "$_p" "$OPS_REQUIRED_RANGE"
            done
        } >"$_v/opp_kernel/version.info"
    fi
    for _kind in running upgrade installed; do
        _line="opp_kernel_${_kind}_version=[$CANN_INNER_DOTTED:$VERSION]"
        if [ -f "$_v/version.cfg" ] && grep -q "^opp_kernel_${_kind}_version=" "$_v/version.cfg"; then
            sed "s/^opp_kernel_${_kind}_version=.*/$_line/" "$_v/version.cfg" >"$_v/version.cfg.tmp"
            mv "$_v/version.cfg.tmp" "$_v/version.cfg"
        else
            echo "$_line" >>"$_v/version.cfg"
        fi
    done
    say INFO "Ascend-cann-kernels-${CHIP}_${VERSION}_linux-$PKG_ARCH_NAME install success, installed in $IP/ascend-toolkit/$VERSION/opp."
    oplog Success
}

# ---------------------------------------------------------------- CANN NNAL (ATB)
nnal_main() {
    need_root
    check_arch
    cann_path
    _n=$HP/nnal/atb
    if [ "$ACTION" = uninstall ]; then
        [ -f "$_n/$VERSION/version.info" ] || die "Ascend-cann-nnal $VERSION is not installed in $IP/nnal, uninstall failed."
        rm -rf "${_n:?}/$VERSION"
        if ! latest_fix "$_n"; then
            rm -f "${_n:?}/set_env.sh"
            rmdir "$_n" "$HP/nnal" 2>/dev/null
        fi
        say INFO "Ascend-cann-nnal_${VERSION} uninstall success"
        oplog Success
        return
    fi
    [ "$ACTION" = check ] && return 0
    say INFO "LogFile:$LOG_DIR_L/ascend_install.log"
    say INFO "install start"
    if ! ls "$HP"/ascend-toolkit/*/"$PKG_ARCH"-linux/ascend_toolkit_install.info >/dev/null 2>&1; then
        die "Ascend-cann-toolkit is not installed in $IP, please install it and source $IP/ascend-toolkit/set_env.sh first."
    fi
    say INFO "The installation path is $IP/nnal."
    _nv=$_n/$VERSION
    rm -rf "$_nv"
    for _abi in 0 1; do
        _d=$_nv/atb/cxx_abi_$_abi
        mkdir -p "$_d/lib" "$_d/include" "$_d/bin"
        dummy_file "$_d/lib/libatb.so"
        cat >"$_d/set_env.sh" <<EOF
export ATB_HOME_PATH=$IP/nnal/atb/latest/atb/cxx_abi_$_abi
export LD_LIBRARY_PATH=\${ATB_HOME_PATH}/lib:\${ATB_HOME_PATH}/examples:\${ATB_HOME_PATH}/tests/atbopstest:\${LD_LIBRARY_PATH}
export PATH=\${ATB_HOME_PATH}/bin:\$PATH
export ATB_STREAM_SYNC_EVERY_KERNEL_ENABLE=0
export ATB_STREAM_SYNC_EVERY_RUNNER_ENABLE=0
export ATB_STREAM_SYNC_EVERY_OPERATION_ENABLE=0
EOF
    done
    for _f in "$_nv/version.info" "$_nv/atb/cxx_abi_0/version.info" "$_nv/atb/cxx_abi_1/version.info"; do
        cat >"$_f" <<EOF
    Ascend-cann-atb : $VERSION
    Ascend-cann-atb Version : $ATB_BUILD_VERSION
    Platform : $PKG_ARCH
    branch : $ATB_BRANCH
    commit id : $ATB_COMMIT
EOF
    done
    rm -f "$_n/latest"
    ln -s "$VERSION" "$_n/latest"
    cat >"$_n/set_env.sh" <<EOF
#!/bin/bash
# Ascend NNAL (ATB) environment, simulated: source with --cxx_abi=0 or --cxx_abi=1 (default 1).
nnal_atb_cxx_abi=1
for nnal_atb_arg in "\$@"; do
    case "\$nnal_atb_arg" in --cxx_abi=*) nnal_atb_cxx_abi="\${nnal_atb_arg#*=}";; esac
done
. $IP/nnal/atb/latest/atb/cxx_abi_\${nnal_atb_cxx_abi}/set_env.sh
EOF
    chmod 755 "$_n/set_env.sh"
    keep_script "$_nv/script" "$IP"
    say INFO "Ascend-cann-nnal_${VERSION}_linux-$PKG_ARCH_NAME install success, installed in $IP/nnal."
    oplog Success
}

# ---------------------------------------------------------------- Ascend Docker Runtime
docker_json() {
    # docker_json add|remove FILE RUNTIME_PATH
    command -v python3 >/dev/null 2>&1 || return 2
    python3 - "$@" <<'PYEOF'
import json, os, sys
op, path, rt = sys.argv[1], sys.argv[2], sys.argv[3]
data = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        data = json.load(f)
if op == "add":
    data.setdefault("runtimes", {})["ascend"] = {"path": rt, "runtimeArgs": []}
    data["default-runtime"] = "ascend"
else:
    data.get("runtimes", {}).pop("ascend", None)
    if "runtimes" in data and not data["runtimes"]:
        del data["runtimes"]
    if data.get("default-runtime") == "ascend":
        del data["default-runtime"]
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path + ".tmp", "w") as f:
    json.dump(data, f, indent=4)
    f.write("\n")
os.chmod(path + ".tmp", 0o600)
os.replace(path + ".tmp", path)
PYEOF
}

containerd_toml() {
    # containerd_toml add|remove FILE RUNTIME_PATH
    if [ "$1" = remove ]; then
        [ -f "$2" ] || return 0
        awk '/^# BEGIN ascend-docker-runtime/ { skip = 1 } !skip { print } /^# END ascend-docker-runtime/ { skip = 0 }' \
            "$2" >"$2.tmp" && mv "$2.tmp" "$2"
        return 0
    fi
    containerd_toml remove "$2"
    mkdir -p "$(dirname "$2")"
    [ -f "$2" ] || echo "version = 2" >"$2"
    if grep -q '^version *= *3' "$2"; then
        _s='plugins."io.containerd.cri.v1.runtime".containerd.runtimes.ascend'
    else
        _s='plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ascend'
    fi
    cat >>"$2" <<EOF
# BEGIN ascend-docker-runtime
[$_s]
  runtime_type = "io.containerd.runc.v2"
  [$_s.options]
    BinaryName = "$3"
# END ascend-docker-runtime
EOF
}

docker_runtime_main() {
    need_root
    IP=${INSTALL_PATH:-$DEFAULT_PATH}
    check_path "$IP"
    HP=$R$IP
    _d=$HP/Ascend-Docker-Runtime
    _rt=$IP/Ascend-Docker-Runtime/ascend-docker-runtime
    _rec=$_d/ascend_docker_runtime_install.info
    if [ "$ACTION" = uninstall ]; then
        say INFO "uninstalling ascend docker runtime $VERSION"
        if [ ! -d "$_d" ]; then
            say WARNING "uninstall skipping, the specified install path does not exist"
            oplog Success
            return 0
        fi
        _scene=$(info_get install_scene "$_rec")
        case "${_scene:-docker}" in
            docker) docker_json remove "$R/etc/docker/daemon.json" "$_rt" && say INFO "/etc/docker/daemon.json modify success";;
            containerd) containerd_toml remove "$R/etc/containerd/config.toml" "$_rt" && say INFO "/etc/containerd/config.toml modify success";;
        esac
        rm -rf "$_d"
        say INFO "Ascend Docker Runtime uninstall success"
        oplog Success
        return 0
    fi
    [ "$ACTION" = check ] && return 0
    if [ "$ACTION" = upgrade ]; then
        [ -f "$_rec" ] || die "Ascend Docker Runtime is not installed in $IP, --upgrade is not supported, please use --install"
        SCENE=${SCENE:-$(info_get install_scene "$_rec")}
        INJECTION=${INJECTION:-$(info_get injection_mode "$_rec")}
    fi
    SCENE=${SCENE:-docker}
    case "$SCENE" in
        docker|containerd|crio|isula) ;;
        *) die "install scene '$SCENE' is not supported, use docker, containerd, crio or isula";;
    esac
    case "$INJECTION" in
        ''|cdi|legacy) ;;
        *) die "injection mode '$INJECTION' is not supported, use cdi or legacy";;
    esac
    say INFO "installing ascend docker runtime"
    _cur=${ASCEND_SIM_ARCH:-$(uname -m)}
    [ "$_cur" = "$PKG_ARCH" ] || die "platform($_cur) not match, the package is built for $PKG_ARCH"
    say INFO "platform($_cur) matched!"
    rm -rf "$_d"
    mkdir -p "$_d/script"
    cat >"$_d/ascend-docker-runtime" <<'EOF'
#!/bin/sh
# Simulated Ascend Docker Runtime: hands everything to runc (no NPU devices are injected).
exec runc "$@"
EOF
    cat >"$_d/ascend-docker-hook" <<'EOF'
#!/bin/sh
# Simulated ascend-docker-hook: nothing to inject.
exit 0
EOF
    cat >"$_d/ascend-docker-cli" <<'EOF'
#!/bin/sh
# Simulated ascend-docker-cli: nothing to mount.
exit 0
EOF
    chmod 755 "$_d/ascend-docker-runtime" "$_d/ascend-docker-hook" "$_d/ascend-docker-cli"
    printf 'Version=%s\n' "$VERSION" >"$_d/version.info"
    {
        echo "version=v$VERSION"
        echo "install_path=$IP/Ascend-Docker-Runtime"
        echo "install_scene=$SCENE"
        echo "injection_mode=${INJECTION:-legacy}"
    } >"$_rec"
    keep_script "$_d/script" "$IP"
    say INFO "install executable files success"
    say INFO "install scene is '$SCENE'."
    case "$SCENE" in
        docker)
            docker_json add "$R/etc/docker/daemon.json" "$_rt"
            case $? in
                0) say INFO "/etc/docker/daemon.json modify success";;
                2) if [ -s "$R/etc/docker/daemon.json" ]; then
                       rm -rf "$_d"
                       die "python3 is needed to modify the existing /etc/docker/daemon.json"
                   fi
                   mkdir -p "$R/etc/docker"
                   printf '{\n    "runtimes": {\n        "ascend": {\n            "path": "%s",\n            "runtimeArgs": []\n        }\n    },\n    "default-runtime": "ascend"\n}\n' "$_rt" >"$R/etc/docker/daemon.json"
                   chmod 600 "$R/etc/docker/daemon.json"
                   say INFO "/etc/docker/daemon.json modify success";;
                *) rm -rf "$_d"; die "/etc/docker/daemon.json is not valid JSON, modify failed";;
            esac;;
        containerd)
            containerd_toml add "$R/etc/containerd/config.toml" "$_rt"
            say INFO "/etc/containerd/config.toml modify success";;
    esac
    say INFO "Ascend Docker Runtime has been installed in: $IP/Ascend-Docker-Runtime"
    say INFO "The version of Ascend Docker Runtime is: $VERSION"
    say INFO "please reboot daemon and container engine to take effect"
    if [ "$ACTION" = upgrade ]; then
        say INFO "Ascend Docker Runtime upgrade success"
    else
        say INFO "Ascend Docker Runtime install success"
    fi
    oplog Success
}

# The simulator's own record, not a Huawei log: each install, upgrade or removal with the number of processes that held
# an NPU when it started (from the simulator's state), so that tests prove a node was drained before its packages
# changed, and in which order they changed.
sim_record() {
    _state=${ASCEND_SIM_STATE:-$R/etc/ascend-sim/state.json}
    _busy=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1])).get("processes") or []))' "$_state" \
        2>/dev/null) || _busy=unknown
    mkdir -p "$R/var/log/ascend-sim" 2>/dev/null
    printf '%s %s %s %s npu_processes=%s\n' "$(date '+%Y-%m-%dT%H:%M:%S')" "$COMPONENT" "$VERSION" "$ACTION" \
        "${_busy:-unknown}" >>"$R/var/log/ascend-sim/installers.log" 2>/dev/null
    return 0
}
if [ "$ACTION" != check ]; then sim_record; fi

case "$COMPONENT" in
    driver) driver_main;;
    firmware) firmware_main;;
    toolkit) toolkit_main;;
    kernels) kernels_main;;
    nnal) nnal_main;;
    docker-runtime) docker_runtime_main;;
esac
exit 0
