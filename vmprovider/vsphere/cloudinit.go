package vsphere

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// CloudInitTransport says how a Spec's CloudInit reaches the guest
// (Config.CloudInitTransport).
type CloudInitTransport string

const (
	// CloudInitCustomization sends cloud-init's data as a guest
	// customization (CustomizationCloudinitPrep) that vCenter applies at
	// the first boot and reports on in guest.customizationInfo, so that a
	// customization that failed is a VM.Failed. It needs vCenter 7.0 U3 or
	// later and a template whose VMware Tools run customizations. It is
	// the default (the empty transport).
	CloudInitCustomization CloudInitTransport = "Customization"
	// CloudInitGuestInfo writes cloud-init's data into the new VM's
	// configuration, as vm-operator does: guestinfo.userdata and
	// guestinfo.metadata, gzipped and base64-encoded (their .encoding keys
	// say "gzip+base64"), which cloud-init's VMware datasource reads
	// (cloud-init 21.3 or later, with VMware Tools running in the guest);
	// the template's own guestinfo user data, metadata and vendor data
	// are removed from the clone. The clone removes any vApp
	// configuration the template carries (VAppConfigRemoved), whose OVF
	// environment cloud-init would read first. Nothing reports whether
	// cloud-init succeeded: VM.Failed stays empty. The data is readable by
	// whoever may read the VM's configuration in vCenter, and each VM
	// carries it, so List and the watch, which read every VM's
	// configuration, read it too.
	CloudInitGuestInfo CloudInitTransport = "GuestInfo"
)

// guestinfo keys cloud-init's VMware datasource reads.
const (
	guestInfoUserData           = "guestinfo.userdata"
	guestInfoUserDataEncoding   = "guestinfo.userdata.encoding"
	guestInfoMetaData           = "guestinfo.metadata"
	guestInfoMetaDataEncoding   = "guestinfo.metadata.encoding"
	guestInfoVendorData         = "guestinfo.vendordata"
	guestInfoVendorDataEncoding = "guestinfo.vendordata.encoding"
	guestInfoEncoding           = "gzip+base64"
)

// check returns an error wrapping ErrConfig for a transport that is none
// of the known ones.
func (t CloudInitTransport) check() error {
	switch t {
	case "", CloudInitCustomization, CloudInitGuestInfo:
		return nil
	}
	return fmt.Errorf("CloudInitTransport %q: want %q or %q: %w", string(t), CloudInitCustomization, CloudInitGuestInfo, ErrConfig)
}

// sendCloudInit puts spec's cloud-init data in clone as transport says:
// a guest customization, or guestinfo keys with the template's vApp
// configuration removed.
func sendCloudInit(clone *types.VirtualMachineCloneSpec, spec vmprovider.Spec, transport CloudInitTransport) error {
	ci := spec.CloudInit
	if ci == nil {
		return nil
	}
	if transport != CloudInitGuestInfo {
		clone.Customization = &types.CustomizationSpec{
			Identity: &types.CustomizationCloudinitPrep{Metadata: ci.MetaData, Userdata: ci.UserData},
			// Required by the API; cloud-init's own network config applies.
			GlobalIPSettings: types.CustomizationGlobalIPSettings{},
		}
		return nil
	}
	// Every key cloud-init's datasource reads is written, an empty value
	// (which vCenter takes as the key's removal) for what the Spec does
	// not give: a clone inherits the template's configuration, and
	// cloud-init would otherwise run the user data or vendor data a
	// template was built with (a Packer build's, say).
	keys := []types.BaseOptionValue{
		&types.OptionValue{Key: guestInfoMetaData, Value: ""}, &types.OptionValue{Key: guestInfoMetaDataEncoding, Value: ""},
		&types.OptionValue{Key: guestInfoUserData, Value: ""}, &types.OptionValue{Key: guestInfoUserDataEncoding, Value: ""},
		&types.OptionValue{Key: guestInfoVendorData, Value: ""}, &types.OptionValue{Key: guestInfoVendorDataEncoding, Value: ""},
	}
	for i, data := range []string{ci.MetaData, ci.UserData} {
		if data == "" {
			continue
		}
		v, err := gzipBase64(data)
		if err != nil {
			return err
		}
		keys[2*i].GetOptionValue().Value, keys[2*i+1].GetOptionValue().Value = v, guestInfoEncoding
	}
	clone.Config.ExtraConfig = append(clone.Config.ExtraConfig, keys...)
	removed := true
	clone.Config.VAppConfigRemoved = &removed
	return nil
}

// gzipBase64 is s gzipped, then base64-encoded.
func gzipBase64(s string) (string, error) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
}
