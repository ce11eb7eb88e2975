package synth

// The catalogs the generator draws realistic values from.

// vehicleType is a kind of device. hoursOnly machines (forklifts,
// excavators) are serviced by engine hours rather than kilometres.
type vehicleType struct {
	name      string
	weight    int
	hoursOnly bool
}

const (
	vTruck = iota
	vVan
	vCar
	vReefer
	vBus
	vTrailer
	vForklift
	vExcavator
)

var vehicleTypes = []vehicleType{
	vTruck: {"Truck", 30, false}, vVan: {"Van", 25, false}, vCar: {"Car", 15, false},
	vReefer: {"Reefer", 8, false}, vBus: {"Bus", 7, false}, vTrailer: {"Trailer", 5, false},
	vForklift: {"Forklift", 5, true}, vExcavator: {"Excavator", 5, true},
}

// vehicleWeights returns the weights of vehicleTypes, in order.
func vehicleWeights() []int {
	w := make([]int, len(vehicleTypes))
	for i, v := range vehicleTypes {
		w[i] = v.weight
	}
	return w
}

// types is a set of vehicle types.
type types uint16

func typeSet(ts ...int) types {
	var s types
	for _, t := range ts {
		s |= 1 << t
	}
	return s
}

func (s types) has(t int) bool { return s&(1<<t) != 0 }

var (
	motorised = typeSet(vTruck, vVan, vCar, vReefer, vBus, vForklift, vExcavator)
	onRoad    = typeSet(vTruck, vVan, vCar, vReefer, vBus, vTrailer)
	roadMotor = typeSet(vTruck, vVan, vCar, vReefer, vBus)
	heavy     = typeSet(vTruck, vBus)
	machines  = typeSet(vForklift, vExcavator)
)

// serviceKind is a maintenance task: its name and its intervals (0 for a
// criterion it does not use) in km, engine hours and days.
type serviceKind struct {
	name            string
	odo, engh, days int
	weight          int
	fits            types
}

var serviceKinds = []serviceKind{
	{"Oil change", 15_000, 0, 365, 12, motorised},
	{"Oil filter replacement", 30_000, 0, 0, 5, motorised},
	{"Air filter replacement", 40_000, 0, 0, 6, motorised},
	{"Fuel filter replacement", 60_000, 0, 0, 4, motorised},
	{"Cabin filter replacement", 0, 0, 365, 3, roadMotor},
	{"Brake pads front", 40_000, 0, 0, 6, onRoad},
	{"Brake pads rear", 60_000, 0, 0, 5, onRoad},
	{"Brake fluid flush", 0, 0, 730, 4, roadMotor},
	{"Tyre rotation", 10_000, 0, 0, 7, onRoad},
	{"Tyre replacement", 80_000, 0, 0, 3, onRoad | machines},
	{"Wheel alignment", 30_000, 0, 0, 3, onRoad},
	{"Coolant flush", 0, 0, 730, 3, motorised},
	{"Transmission service", 90_000, 0, 0, 3, roadMotor},
	{"Timing belt replacement", 120_000, 0, 1825, 2, roadMotor},
	{"Battery check", 0, 0, 180, 5, motorised},
	{"Annual inspection", 0, 0, 365, 8, onRoad | machines},
	{"Tachograph calibration", 0, 0, 730, 3, heavy},
	{"Tachograph download", 0, 0, 90, 2, heavy},
	{"Fire extinguisher check", 0, 0, 365, 3, motorised},
	{"First aid kit check", 0, 0, 365, 2, roadMotor},
	{"Reefer unit service", 0, 1_500, 0, 10, typeSet(vReefer)},
	{"Hydraulics service", 0, 500, 0, 8, machines},
	{"Engine service", 0, 250, 0, 8, machines},
	{"DPF cleaning", 150_000, 0, 0, 2, heavy},
	{"AdBlue system check", 50_000, 0, 0, 2, typeSet(vTruck, vBus, vVan)},
	{"Air conditioning service", 0, 0, 730, 3, roadMotor},
	{"Wiper blades", 0, 0, 365, 3, roadMotor},
	{"Clutch inspection", 100_000, 0, 0, 2, roadMotor},
	{"Suspension check", 50_000, 0, 0, 2, onRoad},
	{"Chassis lubrication", 0, 0, 90, 3, typeSet(vTruck, vTrailer, vExcavator)},
	{"Trailer brake check", 0, 0, 180, 6, typeSet(vTrailer)},
	{"Coupling inspection", 0, 0, 180, 4, typeSet(vTrailer, vTruck)},
	{"Lights check", 0, 0, 90, 2, onRoad | machines},
	{"Tail lift service", 0, 0, 365, 2, typeSet(vTruck, vVan)},
	{"Mast chain inspection", 0, 300, 0, 4, typeSet(vForklift)},
	{"Track tension check", 0, 200, 0, 4, typeSet(vExcavator)},
}

// minEligibleKinds is the fewest service kinds any vehicle type has, so the
// most services one device can get with distinct names (UNIQUE (imei,
// name)). A test checks it against the catalog.
const minEligibleKinds = 11

// eligibleKinds lists, per vehicle type, the service kinds it can have.
func eligibleKinds() [][]int {
	out := make([][]int, len(vehicleTypes))
	for t := range vehicleTypes {
		for k, sk := range serviceKinds {
			if sk.fits.has(t) {
				out[t] = append(out[t], k)
			}
		}
	}
	return out
}

// imeiTACs are type allocation codes (the first 8 IMEI digits) of common
// tracker models; each prefixes up to a million serial numbers.
var imeiTACs = []string{"35693803", "35209900", "86123404", "35316604", "86472103", "35404906", "86728703", "35875407"}

// maxGeneratedDevices is the most devices with distinct IMEIs.
const maxGeneratedDevices = 8_000_000

// reportTypes are report types with their display names.
var reportTypes = [][2]string{
	{"general", "General information"}, {"drives_stops", "Drives and stops"}, {"overspeed", "Overspeeds"},
	{"fuel_fillings", "Fuel fillings"}, {"fuel_thefts", "Fuel thefts"}, {"zone_in_out", "Zone in/out"},
	{"events", "Events"}, {"service", "Maintenance"}, {"mileage_daily", "Daily mileage"},
	{"ignition_on_off", "Ignition on/off"}, {"logic_sensors", "Logic sensors"}, {"rag", "Driver behaviour (RAG)"},
}

var reportFormats = []string{"html", "pdf", "xls"}

// eventTypes are event rule types with their display names.
var eventTypes = [][2]string{
	{"overspeed", "Overspeed"}, {"zone_in", "Zone in"}, {"zone_out", "Zone out"}, {"sos", "SOS"},
	{"ignition_on", "Ignition on"}, {"ignition_off", "Ignition off"}, {"fuel_drop", "Fuel drop"},
	{"connection_no", "No connection"}, {"param", "Parameter"}, {"route_out", "Route out"},
	{"stopped", "Stopped"}, {"door_open", "Door open"},
}

var firstNames = []string{
	"Ana", "Ben", "Chloe", "Daniel", "Elena", "Farid", "Grace", "Hugo", "Irene", "Jonas", "Kateryna", "Liam",
	"Maria", "Noah", "Olga", "Pedro", "Quentin", "Rosa", "Samir", "Tomas", "Ursula", "Victor", "Wanda", "Yusuf", "Zoe",
}

var lastNames = []string{
	"Silva", "Novak", "Schmidt", "Kowalski", "Rossi", "Garcia", "Dubois", "Jensen", "Horvat", "Popescu", "Nagy",
	"Murphy", "Costa", "Berg", "Kaya", "Ivanova", "Lindqvist", "Moreau", "Fischer", "Santos",
}

var workshops = []string{"Main depot", "North depot", "Dealer service", "Mobile mechanic", "Tyre centre"}
